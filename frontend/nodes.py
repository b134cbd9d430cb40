"""Multi-node runs on the page: one metric, one trace per node.

A run over N nodes (radtrack/nodes/, docs/sheets.md "Multi-node rows") stores node 0's series
under the plain keys and node K's under ``node<K>/<key>`` (radtrack/store/schema.py
``node_scoped``). The page lists each metric once (:meth:`DataSource.metric_keys` folds the
node-scoped keys of such a run into their plain key) and draws a picked metric once per
node: each node of a run is a *lane*, drawn as the run is (a trace per metric, a legend group
of its own, ``<run label> · node K``). Node 0's lane is the run id itself, node K's the run
id scoped as a key is (``node1/<run id>``), so the chart's trace ``meta`` ([lane, metric]),
the zoom path's answer and the export name each node's series alike. A one-node run is one
lane, its run id: it looks as it always did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from radtrack.analysis.node_figures import node_table
from radtrack.frontend.attributed import chart_series
from radtrack.frontend.data import DataSource, Series, node_count
from radtrack.frontend.figures import ChartOptions, run_colours
from radtrack.frontend.summaries import FLAGGED, TIPS
from radtrack.store import schema

__all__ = ["lane", "lane_colours", "lane_labels", "node_count", "nodes_note", "plotted",
           "run_lanes", "split_lane", "with_node_rows"]


def lane(run_id: str, node: int) -> str:
    """The trace owner of node ``node`` of run ``run_id``: the run id for node 0."""
    return run_id if not node else schema.node_scoped(run_id, node)


def split_lane(name: str) -> tuple[str, int]:
    """:func:`lane` reversed: (run id, node)."""
    node, run_id = schema.split_node(name)
    return run_id, node or 0


def run_lanes(rows: Sequence[Mapping[str, object]], run_ids: Sequence[str]) -> list[str]:
    """Every run's lanes in selection order: a run, then its nodes 1..N-1."""
    counts = {str(r["run_id"]): node_count(r) for r in rows}
    return [lane(r, k) for r in run_ids for k in range(counts.get(r, 1))]


def lane_colours(run_ids: Sequence[str], lanes: Sequence[str]) -> dict[str, str]:
    """A colour per lane: a run's node 0 keeps the run's own colour (as everywhere on the page),
    its other nodes take colours no selected run holds."""
    extra = [x for x in lanes if x not in set(run_ids)]
    return run_colours([*run_ids, *extra])


def lane_labels(labels: Mapping[str, str], rows: Sequence[Mapping[str, object]]) -> dict[str, str]:
    """Legend names per lane: a multi-node run's label followed by its node (``· node 1``),
    node 0 included; a one-node run's label as it is."""
    out = dict(labels)
    for row in rows:
        run_id = str(row["run_id"])
        count = node_count(row)
        if count > 1:
            base = labels.get(run_id, run_id[:8])
            out.update({lane(run_id, k): f"{base} · node {k}" for k in range(count)})
    return out


def nodes_note(rows: Sequence[Mapping[str, object]]) -> str:
    """What the metric picker says for a selection holding multi-node runs, else ''."""
    counts = sorted({node_count(r) for r in rows} - {1})
    if not counts:
        return ""
    said = " or ".join(str(n) for n in counts)
    return f"runs over {said} nodes: each metric is drawn once per node"


def plotted(source: DataSource, runs: list[str], metrics: list[str], options: ChartOptions
            ) -> tuple[list[str], dict[tuple[str, str], Series], set[tuple[str, str]]]:
    """What the chart draws: its lanes, the series of each (lane, metric), and which pairs show
    a run's attributed power (attributed.py: node 0's, the run's own). Node K's series of
    ``metric`` is the run's ``node<K>/<metric>``."""
    series, attributed = chart_series(source, runs, metrics, options.power)
    rows = source.run_rows(runs) if runs else []
    lanes = run_lanes(rows, runs)
    scoped = [(x, *split_lane(x)) for x in lanes if x not in set(runs)]
    if not scoped or not metrics:
        return lanes, series, attributed
    series = dict(series)
    for run_id in dict.fromkeys(r for _, r, _ in scoped):
        nodes = [(x, k) for x, r, k in scoped if r == run_id]
        wanted = [schema.node_scoped(m, k) for _, k in nodes for m in metrics]
        found = source.series([run_id], wanted)
        for name, k in nodes:
            for metric in metrics:
                series[(name, metric)] = found[(run_id, schema.node_scoped(metric, k))]
    return lanes, series, attributed


def with_node_rows(table: pd.DataFrame, runs: Sequence[Mapping[str, object]],
                   labels: Mapping[str, str]) -> pd.DataFrame:
    """The Summary table (a ``run`` and a ``run_id`` column; ``runs``: the run rows) with, after each multi-node run's
    row, a row per node and one for all its nodes (radtrack/analysis/node_figures.py: status,
    duration, GPU energy, CO2e where the table has those columns), the node's host, clock
    offset and why it did not finish in the row's tooltip."""
    if table.empty or "run_id" not in table:
        return table
    shown = set(table["run_id"])
    shared = [c for c in ("status", "duration_s", "gpu_energy_j", "co2e_g") if c in table]
    extra: dict[str, list[dict]] = {}
    for run in runs:
        run_id = str(run["run_id"])
        if node_count(run) < 2 or run_id not in shown:
            continue
        for fig in node_table(pd.DataFrame([dict(run)])).to_dict("records"):
            which = "all nodes" if fig["node"] == "all" else f"node {fig['node']}"
            tip = "; ".join(f"{k.replace('_', ' ')} {fig[k]}" for k in (
                "host", "exit_code", "clock_offset_ms", "clock_error_ms", "why") if str(fig[k]))
            row = {"run": f"{labels.get(run_id, run_id)} · {which}", "run_id": run_id,
                   **{c: fig[c] for c in shared}}
            if TIPS in table:
                row[TIPS] = {"run": tip} if tip else {}
            if FLAGGED in table:
                row[FLAGGED] = []
            extra.setdefault(run_id, []).append(row)
    if not extra:
        return table
    out: list[dict] = []
    for row in table.to_dict("records"):
        mine = extra.pop(str(row["run_id"]), [])
        if mine and TIPS in table:  # the run's own row: what its node rows are
            tips = dict(row.get(TIPS) or {})
            said = f"a run over {len(mine) - 1} nodes: each node's figures and all nodes' " \
                   "totals are in the rows below"
            tips["run"] = "\n".join(filter(None, [tips.get("run", ""), said]))
            row = {**row, TIPS: tips}
        out += [row, *mine]
    return pd.DataFrame(out, columns=table.columns)
