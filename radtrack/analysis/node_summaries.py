"""A multi-node run summarised per node and as a whole (radtrack/nodes/; docs/sheets.md,
"Multi-node rows"), for ``radtrack report``'s per-run summary and the page's Summary and
Compare tabs.

Node 0 of such a run holds the run's bare keys and tags, node K >= 1 its own
``node<K>/<key>`` series, ``summary/node<K>/...`` figures and ``radtrack.node<K>.*`` tags
(radtrack/vocab/schema.py). A run's summary read as if it were one node's would mix them
(node K's ``node1/top/cpu_pct`` is a host-CPU series too), so a multi-node run is summarised
here node by node: each node's :func:`node_view` (the run's row with only that node's keys
and tags, under the plain names) from that node's own series, exactly as a one-node run is
(radtrack/compute/summary.py), its span ``summary/node<K>/duration_s``, its GPU energy
``summary/node<K>/gpu_energy_j`` where stored, its status and host from its tags
(:func:`node_parts`). The run's own row then holds the run's figures (:func:`with_totals`):
its status and span, energy summed over its nodes (``summary/nodes/gpu_energy_j`` and
``co2e_g`` where stored), the fewest samples of any node; power, utilisation and CPU stay
per node (a mean over nodes of different hardware says nothing), blank on the run's row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from radtrack.analysis.energy_columns import energy_error_columns
from radtrack.analysis.run_summaries import IDENTITY_COLUMNS, _stored_metrics, sample_count
from radtrack.analysis.summary_energy import apply_attribution
from radtrack.compute.energy_error import combine
from radtrack.compute.gpulabel import physical_gpus_of_row
from radtrack.compute.record_summaries import number as _number
from radtrack.compute.summary import QUANTITIES, summarize_series, summary_metric_keys
from radtrack.vocab import schema

#: (run ids, metric keys) -> a long series frame (radtrack.analysis.data.load_series's)
SeriesLoader = Callable[[list[str], list[str]], pd.DataFrame]
NODE, HOST = "node", "host"
ALL = "all"  # the ``node`` of a multi-node run's own row: the whole run
#: columns that are per node only: blank on the run's row (and why)
PER_NODE_PREFIXES = tuple(f"{q.name}_" for q in QUANTITIES)
PER_NODE_WHY = "per node on a multi-node run (its node rows)"
NO_TOTAL_WHY = "not every node's energy is known: no total (its node rows)"
#: the run's figures, not a node's: blank on a node's row
RUN_ONLY_PREFIXES = ("throughput_", "energy_per_", "time_to_target")
INTERVALS = ("energy_j_ci95_pct", "energy_note", "activity_energy_j", "gpu_energy_j_ci95_pct")
_NODE_TAG = re.compile(re.escape(schema.TAG_PREFIX) + r"node(\d+)\.(.+)")
#: node 0's own facts among the run's tags (another node's are its radtrack.node<K>.* tags)
_NODE0_TAGS = (schema.HOSTNAME, schema.GPU_NAMES, schema.GPU_UUIDS, schema.GPU_DRIVER,
               schema.GPU_CUDA, schema.MIG_UUID, schema.MIG_PROFILE, schema.MIG_GPU_INSTANCE,
               schema.EXIT_CODE, schema.STOPPED_BY, schema.ERROR, schema.SPOOL_DROPPED_TAG)
_NODE0_PREFIXES = (schema.LISTENER_TAG_PREFIX, schema.ATTRIBUTION_TAG_PREFIX)


def node_count(row: Mapping[str, object]) -> int:
    """How many nodes a run (a load_runs row) ran on: its ``radtrack.nodes`` tag, else 1."""
    try:
        return max(int(str(row.get(f"tag.{schema.NODES}") or 1)), 1)
    except ValueError:
        return 1


def lane_id(run_id: str, node: int) -> str:
    """The id a node's view goes by: the run's for node 0, ``node<K>/<run id>`` for node K."""
    return run_id if not node else schema.node_scoped(run_id, node)


def node_view(row: Mapping[str, object], node: int) -> dict[str, object]:
    """A multi-node run's ``load_runs`` row as node ``node``'s own, as if it had run alone:
    its ``node<K>/...`` metrics and ``radtrack.node<K>.*`` tags under the plain names, every
    other node's left out (node 0's bare ones too, for K >= 1); ``run_id`` is
    :func:`lane_id`."""
    out: dict[str, object] = {}
    own: dict[str, object] = {}
    for column, value in row.items():
        if not isinstance(column, str):
            continue
        if column.startswith("metric."):
            found, key = schema.split_node(column[len("metric."):])
            if found == node:
                own[f"metric.{key}"] = value
            elif found is None and not node:
                out[column] = value
        elif column.startswith("tag."):
            name = column[len("tag."):]
            if m := _NODE_TAG.fullmatch(name):
                if int(m.group(1)) == node:
                    own[f"tag.{schema.TAG_PREFIX}{m.group(2)}"] = value
            elif not node or not (name in _NODE0_TAGS or name.startswith(_NODE0_PREFIXES)):
                out[column] = value
        else:
            out[column] = value
    out.update(own)  # a node's own figure wins over the run's bare one
    out["run_id"] = lane_id(str(row["run_id"]), node)
    return out


def _keys(view: Mapping[str, object]) -> tuple[set[str], dict[str, float]]:
    return _stored_metrics(view)


def _summaries(views: list[dict], run_id: str, load: SeriesLoader, quantiles: bool) -> pd.DataFrame:
    """One summary row per view (a node of run ``run_id``), from that node's own series."""
    rows = []
    for view in views:
        node, _ = schema.split_node(str(view["run_id"]))
        node = node or 0
        keys, stored = _keys(view)
        wanted = summary_metric_keys(sorted(keys))
        series = load([run_id], [k if not node else schema.node_scoped(k, node) for k in wanted]) \
            if wanted else None
        # the node's own span; node 0's is the run's where it stored none, node K's its samples'
        duration = _number(view.get(f"metric.{schema.DURATION_KEY}"))
        if duration != duration and not node:
            duration = _number(view.get("duration_s"))
        if series is not None and not series.empty:
            series = series[series["run_id"] == run_id].assign(
                run_id=view["run_id"], metric=[schema.split_node(m)[1] for m in series["metric"]])
        if series is None or series.empty:
            rows.append(pd.DataFrame([{"run_id": view["run_id"], "duration_s": duration,
                                       "energy_j": np.nan,
                                       "samples": sample_count(keys, stored, None)}]))
            continue
        stats = summarize_series(series, {str(view["run_id"]): duration}, quantiles)
        stats["samples"] = sample_count(keys, stored, series)
        rows.append(stats)
    table = pd.concat(rows, ignore_index=True)
    # a node's part runs plain (no co-location: docs/sheets.md), so no stored accounting
    return apply_attribution(pd.DataFrame(views), table)


def node_parts(runs: pd.DataFrame, summary: pd.DataFrame, load: SeriesLoader,
               quantiles: bool = True) -> pd.DataFrame:
    """A summary row per node of every multi-node run of ``runs`` (a load_runs frame) that
    ``summary`` (summarize_runs of it) holds: the summary's columns, each node's own, plus
    ``node`` (0..N-1), ``host``, ``gpu_used`` and the energy intervals (energy_columns.py).
    ``load`` reads the run's series (node K's under ``node<K>/<key>``). Empty when no run
    spans nodes."""
    columns = [*summary.columns, NODE, HOST, "gpu_used", *INTERVALS]
    if runs.empty or "run_id" not in summary:
        return pd.DataFrame(columns=columns)
    shown = summary.set_index("run_id")
    out: list[dict] = []
    for run in runs.to_dict("records"):
        count, run_id = node_count(run), str(run["run_id"])
        if count < 2 or run_id not in shown.index:
            continue
        base = shown.loc[run_id].to_dict()
        views = [node_view(run, k) for k in range(count)]
        figures = _summaries(views, run_id, load, quantiles).set_index("run_id")
        errors = energy_error_columns(pd.DataFrame(views)).set_index("run_id")
        for node, view in enumerate(views):
            mine = figures.loc[view["run_id"]].to_dict()
            # the run's identity; every figure the node's own (blank where it has none)
            row = {c: base[c] if c in IDENTITY_COLUMNS else np.nan
                   for c in summary.columns if c != "run_id" and c in base}
            row.update({c: v for c, v in mine.items() if c in summary.columns
                        and not str(c).startswith(RUN_ONLY_PREFIXES)})

            def tag(name: str, node: int = node, run: dict = run) -> str:
                value = run.get(f"tag.{schema.node_tag(node, name)}")
                return value if isinstance(value, str) else ""

            stored_span = _number(run.get(f"metric.{schema.node_summary_key(node, 'duration_s')}"))
            stored_gpu = _number(run.get(f"metric.{schema.node_summary_key(node, 'gpu_energy_j')}"))
            row.update({
                "run_id": run_id, NODE: str(node),
                HOST: tag("host") or (str(run.get(f"tag.{schema.HOSTNAME}") or "") if not node else ""),
                "status": tag("status") or run.get("status"),
                "gpu_used": physical_gpus_of_row(view) or "-",
                **{c: errors.loc[view["run_id"], c] for c in INTERVALS},
            })
            if stored_span == stored_span:
                row["duration_s"] = stored_span
            if stored_gpu == stored_gpu:
                row["gpu_energy_j"] = stored_gpu
            out.append(row)
    return pd.DataFrame(out, columns=list(dict.fromkeys([*columns, *(k for r in out for k in r)])))


def _sum(values: pd.Series) -> float:
    numbers = pd.to_numeric(values, errors="coerce")
    return float(numbers.sum()) if len(numbers) and numbers.notna().all() else float("nan")


def run_totals(run: Mapping[str, object], nodes: pd.DataFrame) -> dict[str, object]:
    """The whole run's figures from its nodes' rows (one run's :func:`node_parts`) and its
    stored totals: what :func:`with_totals` puts in the run's row."""
    def stored(quantity: str) -> float:
        return _number(run.get(f"metric.{schema.nodes_total_key(quantity)}"))

    out: dict[str, object] = {NODE: ALL, HOST: "", "gpu_used": ", ".join(
        f"node{n}: {g}" for n, g in zip(nodes[NODE], nodes["gpu_used"], strict=True)
        if isinstance(g, str) and g not in ("", "-")) or "-"}
    span = stored("duration_s")
    if span == span:
        out["duration_s"] = span
    for column in ("energy_j", "gpu_energy_j", "co2e_g", "activity_energy_j"):
        if column in nodes:
            out[column] = _sum(nodes[column])
    for column, quantity in (("gpu_energy_j", "gpu_energy_j"), ("co2e_g", "co2e_g")):
        if (value := stored(quantity)) == value:
            out[column] = value
    if "samples" in nodes:
        counts = pd.to_numeric(nodes["samples"], errors="coerce")
        out["samples"] = float(counts.min()) if counts.notna().all() else float("nan")
    for column, energy in (("energy_j_ci95_pct", "energy_j"), ("gpu_energy_j_ci95_pct", "gpu_energy_j")):
        if column in nodes and energy in nodes:
            parts = [(float(e), float(c)) for e, c in zip(nodes[energy], nodes[column], strict=True)]
            ok = all(np.isfinite(e) and np.isfinite(c) for e, c in parts)
            out[column] = combine(parts) if parts and ok else float("nan")
    if "energy_note" in nodes:
        out["energy_note"] = "; ".join(f"node {n}: {t}" for n, t in zip(nodes[NODE], nodes["energy_note"],
                                                                           strict=True)
                                       if isinstance(t, str) and t)
    return out


def with_totals(table: pd.DataFrame, parts: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``table`` (rows by ``run_id``: a summary, or the energy interval columns) with each
    multi-node run's row holding the run's figures (:func:`run_totals`), its per-node
    columns (power, utilisation, CPU) blank and its energy per unit of work rebased on the
    run's energy. Runs of one node are left as they are."""
    if parts.empty or "run_id" not in table:
        return table
    out = table.copy()
    records = {str(r["run_id"]): r for r in runs.to_dict("records")}
    for run_id, nodes in parts.groupby("run_id", sort=False):
        where = out.index[out["run_id"] == run_id]
        if not len(where) or run_id not in records:
            continue
        totals = run_totals(records[run_id], nodes)
        node0 = _number(nodes.iloc[0].get("energy_j"))
        for column in out.columns:
            if column in totals and column not in (NODE, HOST, "gpu_used"):
                out.loc[where, column] = totals[column]
            elif str(column).startswith(PER_NODE_PREFIXES):
                out.loc[where, column] = np.nan
            elif str(column).startswith("energy_per_") and str(column).endswith("_j"):
                # the run's work over the run's energy: node 0's figure x (run / node 0 energy)
                scale = _number(totals.get("energy_j")) / node0 if node0 else float("nan")
                out.loc[where, column] = pd.to_numeric(out.loc[where, column], errors="coerce") * scale
    return out


def with_node_rows(table: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one row per run, ``run_id`` keyed) with a ``node`` and a ``host`` column
    after ``run_name`` (``all`` on a multi-node run's own row, '' on a one-node run's) and,
    after each multi-node run's row, its node rows (``parts``: the table's columns a node
    has; the run's identity in the others). ``table`` as it is when none of its runs spans
    nodes."""
    if parts.empty or "run_id" not in table:
        return table
    parts = parts[parts["run_id"].isin(set(table["run_id"]))]
    if parts.empty:
        return table
    by_run = {str(r): group for r, group in parts.groupby("run_id", sort=False)}
    rows: list[dict] = []
    for row in table.to_dict("records"):
        mine = by_run.get(str(row["run_id"]))
        if mine is None:
            rows.append({**row, NODE: "", HOST: ""})
            continue
        rows.append({**row, NODE: ALL, HOST: ""})
        for part in mine.to_dict("records"):
            node_row = {c: (part[c] if c in part else row[c]) for c in row}
            for c in node_row:
                if str(c).startswith(RUN_ONLY_PREFIXES) or c == "checks":
                    node_row[c] = np.nan if c != "checks" else ""
            rows.append({**node_row, NODE: part[NODE], HOST: part[HOST]})
    columns = list(table.columns)
    at = columns.index("run_name") + 1 if "run_name" in columns else 1
    columns[at:at] = [NODE, HOST]
    return pd.DataFrame(rows, columns=columns)
