"""Multi-node runs on the page: one metric, one trace per node.

A run over N nodes (radtrack/nodes/, docs/sheets.md "Multi-node rows") stores node 0's series
under the plain keys and node K's under ``node<K>/<key>`` (radtrack/vocab/schema.py
``node_scoped``). The page lists each metric once (:meth:`DataSource.metric_keys` folds the
node-scoped keys of such a run into their plain key) and draws a picked metric once per
node: each node of a run is a *lane*, drawn as the run is (a trace per metric, a legend group
of its own, ``<run label> · node K``). Node 0's lane is the run id itself, node K's the run
id scoped as a key is (``node1/<run id>``), so the chart's trace ``meta`` ([lane, metric]),
the zoom path's answer and the export name each node's series alike. A one-node run is one
lane, its run id: it looks as it always did.

The other tabs: the Summary tab's row of such a run is the whole run (``<run> · all 2
nodes``: its span and energy over every node) with a row per node below it (``<run> · node 1
(gpu-b)``: :func:`with_node_rows`); the Correlation tab takes each node's series as a series
of its own (:func:`lane_series`; a scope per run, pooling its nodes, and one per node); the
Compare tab compares runs as wholes (:func:`whole_run_label`, compare.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from radtrack.analysis.node_figures import node_table
from radtrack.frontend.attributed import chart_series
from radtrack.frontend.data import DataSource, Series, node_count
from radtrack.frontend.figures import ChartOptions, run_colours
from radtrack.frontend.summaries import FLAGGED, NODES, TIPS
from radtrack.vocab import schema

__all__ = ["lane", "lane_colours", "lane_labels", "lane_series", "node_count", "node_host",
           "node_label", "nodes_note", "plotted", "run_lanes", "split_lane", "whole_run_label",
           "with_node_rows"]


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


def node_host(row: Mapping[str, object], node: int) -> str:
    """Node ``node``'s host (its ``radtrack.node<K>.host`` tag), '' where not recorded."""
    host = row.get(f"tag.{schema.node_tag(node, 'host')}")
    return host if isinstance(host, str) else ""


def node_label(row: Mapping[str, object], node: int) -> str:
    """``node K (host)``: how the Summary, Correlation and Compare tabs name a node."""
    host = node_host(row, node)
    return f"node {node} ({host})" if host else f"node {node}"


def whole_run_label(label: str, row: Mapping[str, object]) -> str:
    """A multi-node run's label where its figures are the whole run's: ``<label> · all 2 nodes``;
    a one-node run's label as it is."""
    count = node_count(dict(row))
    return f"{label} · all {count} nodes" if count > 1 else label


def lane_series(source: DataSource, lanes: Sequence[str], metrics: Sequence[str]
                ) -> dict[tuple[str, str], Series]:
    """Each lane's series of ``metrics`` (node K's ``node<K>/<metric>`` of its run), named by
    the lane: analysis over them (the Correlation tab's) tells the nodes apart."""
    from dataclasses import replace

    out: dict[tuple[str, str], Series] = {}
    for name in lanes:
        run_id, node = split_lane(name)
        wanted = {m: schema.node_scoped(m, node) if node else m for m in metrics}
        found = source.series([run_id], list(wanted.values()))
        for metric, key in wanted.items():
            out[(name, metric)] = replace(found[(run_id, key)], run_id=name, metric=metric)
    return out


def with_node_rows(table: pd.DataFrame, runs: Sequence[Mapping[str, object]],
                   labels: Mapping[str, str]) -> pd.DataFrame:
    """The Summary table (a ``run`` and a ``run_id`` column; ``runs``: the run rows) with each
    multi-node run's row named as the whole run (``<run> · all 2 nodes``: its span and energy
    over every node, summaries.py ``with_nodes``) and followed by a row per node (``<run> ·
    node 1 (gpu-b)``: that node's own figures from the hidden ``_nodes`` column; its exit code,
    clock offset and why it did not finish in the row's tooltip,
    radtrack/analysis/node_figures.py). The hidden column is dropped."""
    if table.empty or "run_id" not in table or NODES not in table:
        return table.drop(columns=[NODES], errors="ignore")
    rows = {str(r["run_id"]): r for r in runs}
    columns = [c for c in table.columns if c != NODES]
    out: list[dict] = []
    for row in table.to_dict("records"):
        parts = row.pop(NODES, None)
        run_id = str(row["run_id"])
        run = rows.get(run_id)
        if not isinstance(parts, list) or not parts or run is None:
            out.append(row)
            continue
        label = labels.get(run_id, run_id)
        row["run"] = whole_run_label(label, run)
        if TIPS in row:  # the run's own row: what it holds, what its node rows are
            tips = dict(row.get(TIPS) or {})
            said = (f"a run over {len(parts)} nodes: this row is the whole run (its span, and its "
                    "energy summed over every node); each node's own figures, power and "
                    "utilisation included, are in the rows below")
            tips["run"] = "\n".join(filter(None, [tips.get("run", ""), said]))
            row[TIPS] = tips
        out.append(row)
        facts = {str(f["node"]): f for f in node_table(pd.DataFrame([dict(run)])).to_dict("records")}
        for part in parts:
            node = int(part["node"])
            fact = facts.get(str(node), {})
            tip = "; ".join(f"{k.replace('_', ' ')} {fact[k]}" for k in (
                "host", "exit_code", "clock_offset_ms", "clock_error_ms", "why") if str(fact.get(k, "")))
            mine = {c: part.get(c) for c in columns if c in part and c not in ("run", "run_id")}
            node_row = {c: None for c in columns} | mine | {
                "run": f"{label} · {node_label(run, node)}", "run_id": run_id}
            if "checks" in columns:
                node_row["checks"] = ""
            if TIPS in columns:
                node_row[TIPS] = {"run": tip} if tip else {}
            if FLAGGED in columns:
                node_row[FLAGGED] = []
            out.append(node_row)
    return pd.DataFrame(out, columns=columns)
