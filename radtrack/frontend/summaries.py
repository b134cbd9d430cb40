"""The Summary tab's rows, one per run, cached.

A FINISHED run's summary never changes, so each run is summarised once for the life of
the server (a run still RUNNING again after ``refresh_s``), and ticking one more run
summarises only that run. The values are ``radtrack.analysis.summarize_runs``'s: the
launcher's stored summary metrics (``summary/<key>/mean|max``, ``summary/<l>/<scope>/energy_j``,
read for all the selected runs with their run rows, which the page already holds), samples
(through the server's series cache) only for what those cannot answer.

A run over several nodes is summarised node by node, each from its own series, and its
row holds the whole run (radtrack/analysis/node_summaries.py); its nodes' rows go with it
in the hidden ``_nodes`` column (radtrack/frontend/nodes.py draws them below the run's).

Each row also says what cannot be trusted as it stands (``checks``: the short names of
radtrack/compute/result_checks.py's flags, as ``radtrack report`` prints them) and, in the
hidden ``_tips`` column, a cell's tooltip: why a blank cell is blank (a CPU-only run, no GPU
listener, no co-location accounting) and each flag's why and what to do; ``_flagged`` names
the figures a flag qualifies (assets/summary_table.js marks those cells).

A run co-located with others but recorded without co-location accounting gets its
attributed energy from accounting its whole workload from the stored traces
(radtrack/analysis/stored_accounting.py); the rows of that workload's other runs come out of the
same accounting, so they are summarised in the same call and cached too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from radtrack.analysis.run_summaries import summarize_runs
from radtrack.frontend.data import LIVE_STATUSES, DataSource, long_frame
from radtrack.vocab import schema

#: the Summary table with no run selected ({columns, rows}, as the page draws it)
EMPTY_SUMMARY: dict = {"columns": [], "rows": []}

#: columns of summarize_runs that the run label already says
_DROPPED = ("run_name", "workload", "letter", "file")
#: hidden columns (assets/summary_table.js draws none whose id starts with '_'):
#: column -> tooltip, and the columns a check flags
TIPS, FLAGGED = "_tips", "_flagged"
#: hidden: a multi-node run's rows per node (radtrack/analysis/node_summaries.py node_parts)
NODES = "_nodes"


def summary_frame(source: DataSource, runs: pd.DataFrame) -> pd.DataFrame:
    """``summarize_runs`` of ``runs`` through the server's series cache, without p95.

    A time-weighted p95 needs every sample of every summarised quantity (about 3x the time
    and 190 MiB more server memory for 10 runs x 36,000 points, docs/performance.md), while
    the mean and the max are stored single values.
    """

    def load(run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        return long_frame(source.series(run_ids, keys))

    table = summarize_runs(runs, tracking_uri=source.tracking_uri, quantiles=False, load=load)
    return with_nodes(with_energy_intervals(table, runs), runs, load)


def with_nodes(table: pd.DataFrame, runs: pd.DataFrame, load) -> pd.DataFrame:
    """A multi-node run's row as the whole run (its span and energy over every node, its
    power and utilisation blank: radtrack/analysis/node_summaries.py), its nodes' own rows in
    the hidden ``_nodes`` column (radtrack/frontend/nodes.py draws them below it); as it is when no
    run spans nodes."""
    from radtrack.analysis.node_summaries import node_parts, with_totals

    parts = node_parts(runs, table, load, quantiles=False)
    if parts.empty:
        return table
    out = with_totals(table, parts, runs)
    by_run = {str(r): g.to_dict("records") for r, g in parts.groupby("run_id", sort=False)}
    out[NODES] = out["run_id"].map(lambda r: by_run.get(str(r)))
    return out


def with_checks(table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``checks`` (after ``status``) and the hidden ``_tips``/``_flagged`` columns: the
    per-run checks of radtrack/compute/result_checks.py (few samples, energy interval,
    counter vs power, no GPU activity on a GPU row, a busy host during a solo run) and why
    each blank energy or GPU cell is blank."""
    from radtrack.compute.result_checks import blank_reasons, codes_by_run, run_checks

    if table.empty or "run_id" not in runs or "run_id" not in table:
        return table
    records = {r["run_id"]: r for r in runs.to_dict("records")}
    flags = run_checks([records[r] for r in table["run_id"] if r in records], table)
    out = table.copy()
    codes = codes_by_run(flags)
    tips: dict[str, dict[str, str]] = {}
    flagged: dict[str, list[str]] = {}
    for row in out.to_dict("records"):
        run_id = row["run_id"]
        tip = {c: f"blank: {why}" for c, why in blank_reasons(records.get(run_id, {}), row).items()}
        mine = [f for f in flags if f.run_id == run_id]
        if mine:
            tip["checks"] = "\n".join(f"{f.check}: {f.why}. Do: {f.todo}." for f in mine)
        for f in mine:
            if f.figure == "*":  # the whole run: its name's cell (callbacks_chart's "run")
                tip["run"] = "\n".join(filter(None, [tip.get("run", ""), f"{f.check}: {f.why}"]))
                flagged.setdefault(run_id, []).append("run")
            elif f.figure in out.columns:
                tip[f.figure] = "\n".join(filter(None, [tip.get(f.figure, ""), f"{f.check}: {f.why}"]))
                flagged.setdefault(run_id, []).append(f.figure)
        tips[run_id] = tip
    at = list(out.columns).index("status") + 1 if "status" in out.columns else 1
    out.insert(at, "checks", out["run_id"].map(lambda r: codes.get(r, "")))
    out[TIPS] = out["run_id"].map(tips)
    out[FLAGGED] = out["run_id"].map(lambda r: flagged.get(r, []))
    return out


def with_energy_intervals(table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``energy_j_ci95_pct`` and ``energy_note`` next to ``energy_j`` where the runs stored
    energy intervals (radtrack/analysis/energy_columns.py, as ``radtrack report`` shows
    them): a figure wider than the threshold is flagged with its reason."""
    from radtrack.analysis.energy_columns import energy_error_columns

    if table.empty or "run_id" not in runs:
        return table
    errors = energy_error_columns(runs)
    if errors.empty or not errors["energy_j_ci95_pct"].notna().any():
        return table
    out = table.merge(errors[["run_id", "energy_j_ci95_pct", "energy_note"]], on="run_id", how="left")
    if "energy_j" in out:
        cols = [c for c in out.columns if c not in ("energy_j_ci95_pct", "energy_note")]
        at = cols.index("energy_j") + 1
        out = out[[*cols[:at], "energy_j_ci95_pct", "energy_note", *cols[at:]]]
    return out


class SummaryCache:
    """Per-run summary rows of one tracking store; safe to share between request threads."""

    def __init__(self, source: DataSource,
                 summarize: Callable[[DataSource, pd.DataFrame], pd.DataFrame] = summary_frame):
        self.source = source
        self._summarize = summarize
        self._lock = threading.Lock()
        self._rows: dict[str, tuple[dict, float, bool]] = {}  # run -> (row, when, live)
        self.summarised: list[str] = []  # every run summarised, in order (for tests)

    def _fresh(self, run_id: str) -> bool:
        entry = self._rows.get(run_id)
        if entry is None:
            return False
        _, when, live = entry
        return not live or self.source._clock() - when < self.source.refresh_s

    def table(self, run_ids: Iterable[str]) -> pd.DataFrame:
        """One row per run, in the order asked (``run_id`` first)."""
        run_ids = list(dict.fromkeys(run_ids))
        if not run_ids:
            return pd.DataFrame(columns=["run_id"])
        rows = {row["run_id"]: row for row in self.source.run_rows(run_ids)}
        with self._lock:
            missing = [r for r in run_ids if not self._fresh(r)]
        if missing:
            self._compute(missing, rows)
        with self._lock:
            return pd.DataFrame([self._rows[r][0] for r in run_ids])

    def _compute(self, missing: list[str], rows: dict[str, dict]) -> None:
        wanted = list(missing)
        unaccounted = [rows[r] for r in missing if _needs_accounting(rows[r])]
        if unaccounted:
            # Their attribution accounts the whole workload: summarise its other runs with it.
            for row in self._siblings(unaccounted):
                if row["run_id"] not in wanted and not self._fresh(row["run_id"]):
                    wanted.append(row["run_id"])
        frame = self.source.runs(wanted)
        table = with_checks(self._summarize(self.source, frame), frame)
        table = table.drop(columns=[c for c in _DROPPED if c in table.columns])
        now = self.source._clock()
        live = dict(zip(frame["run_id"], frame["status"].isin(LIVE_STATUSES), strict=True))
        with self._lock:
            for row in table.to_dict("records"):
                self._rows[row["run_id"]] = (row, now, bool(live.get(row["run_id"])))
                self.summarised.append(row["run_id"])

    def _siblings(self, unaccounted: list[dict]) -> list[dict]:
        found: list[dict] = []
        for experiment in {str(r.get("experiment")) for r in unaccounted}:
            parents = {r.get("parent_run_id") for r in unaccounted
                       if str(r.get("experiment")) == experiment and r.get("parent_run_id")}
            found += [row for row in self.source.experiment_rows(experiment)
                      if row.get("parent_run_id") in parents]
        return found


def _needs_accounting(row: dict) -> bool:
    """A co-located run without stored attribution (radtrack/analysis/summary_energy.py)."""
    others = row.get(f"tag.{schema.COLOCATED_WITH}")
    if not (isinstance(others, str) and others.strip()):
        return False
    summaries = f"metric.{schema.SUMMARY_ATTRIBUTION_PREFIX}"
    return not any(str(k).startswith(summaries) and not _missing(v) for k, v in row.items())


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
