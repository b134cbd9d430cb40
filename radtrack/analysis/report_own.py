"""What the user's own code measured, for ``radtrack report``: the metrics the script logged
(``loss``, ``accuracy``) and its code windows (``run.window("epoch")``), each beside the
hardware summary of the same run's span.

Two tables, both for row runs (a ``RADTBenchmark`` script logs into its row's run) and for
the runs a script made itself (``mlflow.start_run()``, radtrack/analysis/script_runs.py):

- ``own_metrics``: a row per run with a metric of its own: the last value the script
  logged of each, then the run's span, energy, power, utilisation and CPU;
- ``windows``: a row per run and window name: how many times it ran, its time and energy
  summed over them (the energy's 95 % interval combined as independent errors,
  radtrack/compute/energy_error.py), and their share of the run's span and energy.

A window's figures are those the end of the run stored (``window/<name>/<quantity>``, one
point per occurrence: radtrack/postrun/window_energy.py); nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from radtrack.analysis.script_runs import own_metric_columns
from radtrack.compute.energy_error import combine
from radtrack.vocab import schema

#: the run's hardware summary beside its own figures (columns of the per-run summary)
SPAN_COLUMNS = ["duration_s", "energy_j", "power_w_mean", "gpu_util_pct_mean", "proc_cpu_pct_mean",
                "cpu_pct_mean"]
WINDOW_COLUMNS = ["run_id", "run_name", "window", "count", "duration_s", "share_of_span_pct",
                  "energy_j", "energy_j_ci95_pct", "share_of_energy_pct", "gpu_energy_j", "cpu_energy_j",
                  "below_resolution"]
#: the window figures summed over a window's occurrences
_SUMMED = ("duration_s", "energy_j", "gpu_energy_j", "cpu_energy_j")
_METRIC = "metric."

#: (run ids, metric keys) -> load_series' long frame (run_id, metric, step, value, ...)
SeriesLoader = Callable[[list[str], list[str]], pd.DataFrame]


def own_metrics_table(runs: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """A row per run of ``runs`` (a load_runs frame) that logged a metric of its own: its
    name, the last value of each, and ``summary``'s span columns for the run."""
    own = [c for c in own_metric_columns(runs) if not c.startswith(_METRIC + schema.WINDOW_PREFIX)]
    if runs.empty or not own:
        return pd.DataFrame(columns=["run_id", "run_name", *SPAN_COLUMNS])
    logged = runs[runs[own].notna().any(axis=1)]
    own = [c for c in own if logged[c].notna().any()]  # another run's metric (a parent's) is not theirs
    table = logged[["run_id", "run_name", *own]].rename(columns={c: c.removeprefix(_METRIC) for c in own})
    span = summary[["run_id", *[c for c in SPAN_COLUMNS if c in summary.columns]]]
    return table.merge(span, on="run_id", how="left").reset_index(drop=True)


#: the stored window figures the table reads (each a history: one point per occurrence)
_READ = (*_SUMMED, "energy_j" + schema.CI95_SUFFIX, "below_resolution_flag")


def window_keys(runs: pd.DataFrame) -> list[str]:
    """The code-window metric keys any of ``runs`` stored that the windows table reads
    (only those: a history read per run and key is a store round trip each)."""
    return [c.removeprefix(_METRIC) for c in runs.columns
            if c.startswith(_METRIC + schema.WINDOW_PREFIX) and c.rpartition("/")[2] in _READ]


def windows_table(runs: pd.DataFrame, summary: pd.DataFrame, load: SeriesLoader) -> pd.DataFrame:
    """A row per run and code window (:data:`WINDOW_COLUMNS`), from the stored window
    figures of every occurrence (``load`` reads their history)."""
    keys = window_keys(runs)
    if runs.empty or not keys:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    series = load(list(runs["run_id"]), keys)
    if series.empty:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    parts = series["metric"].str.removeprefix(schema.WINDOW_PREFIX).str.rpartition("/")
    points = series.assign(window=parts[0], quantity=parts[2])
    names = dict(zip(runs["run_id"], runs["run_name"], strict=True))
    spans = summary.set_index("run_id")
    rows = []
    for (run_id, window), group in points.groupby(["run_id", "window"], sort=False):
        rows.append(_window_row(str(run_id), str(window), group, spans, names))
    return pd.DataFrame(rows, columns=WINDOW_COLUMNS)


def _window_row(run_id: str, window: str, group: pd.DataFrame, spans: pd.DataFrame,
                names: dict[str, str]) -> dict[str, object]:
    by = {q: g.sort_values("step")["value"].astype(float) for q, g in group.groupby("quantity")}
    empty = pd.Series(dtype=float)
    row: dict[str, object] = {"run_id": run_id, "run_name": names.get(run_id, run_id[:8]),
                              "window": window, "count": len(by.get("duration_s", empty))}
    for quantity in _SUMMED:
        values = by.get(quantity, empty).dropna()
        row[quantity] = float(values.sum()) if len(values) else float("nan")
    energies = by.get("energy_j", empty).dropna()
    cis = by.get("energy_j" + schema.CI95_SUFFIX, empty).dropna()
    row["energy_j_ci95_pct"] = (combine(list(zip(energies, cis, strict=True)))
                                if len(energies) and len(energies) == len(cis) else float("nan"))
    row["below_resolution"] = int(by.get("below_resolution_flag", empty).fillna(0).sum())
    span = spans.loc[run_id] if run_id in spans.index else None
    row["share_of_span_pct"] = _share(row["duration_s"], span, "duration_s")
    row["share_of_energy_pct"] = _share(row["energy_j"], span, "energy_j")
    return row


def _share(part: object, span: pd.Series | None, column: str) -> float:
    """``part`` as % of the run's ``column``; NaN where either is unknown or the whole is 0."""
    whole = pd.to_numeric(span.get(column), errors="coerce") if span is not None else float("nan")
    value = float(part) if isinstance(part, int | float) else float("nan")
    return value / float(whole) * 100 if whole == whole and whole > 0 and value == value else float("nan")
