"""The error bar of each run's energy, and the activity model's figure, as report columns.

From a :func:`radtrack.analysis.data.load_runs` frame (``metric.<key>`` columns) per run:

- ``energy_j_ci95_pct``: the 95 % interval of the energy the run is charged (its
  attributed shares' intervals where it was accounted, else its devices' counter
  intervals: any listener's ``energy_counter``, radtrack/vocab/energy_sources.py),
  combined over its devices as independent errors;
- ``energy_note``: empty, or why the interval is over the threshold (the stored flag:
  bursty load near the sensor's period / window too short), with the figure and threshold;
- ``activity_energy_j``: the activity model's energy summed over its GPUs, where stored
  (radtrack/compute/energy_figures.py): an estimate next to the counter's, never instead;
- ``gpu_energy_j_ci95_pct``: the interval of its GPUs' whole energy (``gpu_energy_j``).

:func:`workload_intervals` gives the co-located workloads' measured energy its interval.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from radtrack.compute.energy_error import combine, load_constants
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema

_METRIC = "metric."
COLUMNS = ["run_id", "energy_j_ci95_pct", "energy_note", "activity_energy_j", "gpu_energy_j_ci95_pct"]


def _value(row: dict, key: str) -> float:
    v = row.get(_METRIC + key)
    try:
        v = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")
    return v


_ATTRIBUTED = re.compile(re.escape(schema.SUMMARY_ATTRIBUTION_PREFIX) + r"(?P<scope>.+)/energy_j")


def _counters(keys: list[str]) -> dict[str, str]:
    """device -> the counter key whose run total is stored (``summary/<counter>``), chosen by
    declared role (radtrack/vocab/energy_sources.py), whatever listener reads it."""
    totals = [k[len(schema.SUMMARY_PREFIX):] for k in keys if k.startswith(schema.SUMMARY_PREFIX)]
    return {device: src.key for device, src in es.energy_sources(totals).items()
            if src.kind == "counter"}


def threshold_pct() -> float:
    try:
        return load_constants().threshold_pct
    except ValueError:
        return load_constants("{}").threshold_pct


def energy_error_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run with :data:`COLUMNS`."""
    limit = threshold_pct()
    rows = []
    for row in runs.to_dict("records"):
        keys = [c[len(_METRIC):] for c in row if isinstance(c, str) and c.startswith(_METRIC)]
        counters = _counters(keys)
        attributed = {m.group("scope") for k in keys if (m := _ATTRIBUTED.fullmatch(k))}
        scopes = sorted(set(counters) | attributed)
        parts, flags, gpu_parts = [], [], []
        for scope in scopes:
            att = schema.attribution_summary_key(scope, "energy_j")
            own = schema.summary_key(counters[scope]) if scope in counters else ""
            key = att if np.isfinite(_value(row, schema.ci_key(att))) else own
            energy, ci = _value(row, key), _value(row, schema.ci_key(key))
            if np.isfinite(energy):
                parts.append((energy, ci))
                flags.append(_value(row, schema.ci_flag_key(key)))
            if np.isfinite(gpu_j := _value(row, own)):
                gpu_parts.append((gpu_j, _value(row, schema.ci_key(own))))
        ci = combine(parts) if parts else float("nan")
        flag = int(np.nanmax(flags)) if flags and np.isfinite(flags).any() else 0
        note = ""
        if flag:
            why = schema.CI95_FLAGS.get(flag, "see docs/analysis.md")
            note = f"±{ci:.1f} % > {limit:g} %: {why}" if np.isfinite(ci) and ci > limit else why
        model = [_value(row, schema.energy_model_key(s)) for s in scopes]
        model_j = float(np.sum(model)) if model and np.isfinite(model).all() else float("nan")
        rows.append({"run_id": row["run_id"], "energy_j_ci95_pct": ci, "energy_note": note,
                     "activity_energy_j": model_j,
                     "gpu_energy_j_ci95_pct": combine(gpu_parts) if gpu_parts else float("nan")})
    return pd.DataFrame(rows, columns=COLUMNS)


def workload_intervals(workloads: pd.DataFrame, runs: pd.DataFrame, columns: pd.DataFrame) -> pd.Series:
    """Per row of the co-located workloads table, the 95 % interval (%) of its measured GPU
    energy: the widest of its rows' GPU intervals (the rows read the same counters, so
    their errors are not independent; the workload's span holds each row's)."""
    if workloads.empty:
        return pd.Series(dtype=float)
    launch = runs.get(f"tag.{schema.LAUNCH_ID}", pd.Series("", index=runs.index)).fillna("")
    ci = dict(zip(columns["run_id"], columns["gpu_energy_j_ci95_pct"], strict=True))
    out = []
    for w in workloads.to_dict("records"):
        same = ((runs["experiment"] == w["experiment"]) & (runs["workload"].astype(str) == str(w["workload"]))
                & (launch == (w.get("launch") or "")))
        values = [ci[r] for r in runs.loc[same, "run_id"] if r in ci and np.isfinite(ci[r])]
        out.append(max(values) if values else float("nan"))
    return pd.Series(out, index=workloads.index, dtype=float)
