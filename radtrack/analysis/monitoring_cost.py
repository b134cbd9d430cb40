"""What monitoring cost each run, from the ``summary/monitoring/*`` metrics the launcher
stores at the end of a row (radtrack/run/cost.py): one row per run for ``radtrack report``."""

from __future__ import annotations

import pandas as pd

from radtrack.vocab import schema

_COLUMN = "metric." + schema.MONITORING_PREFIX
_ROW_FIGURES = {  # column -> stored key
    "listeners_cpu_s": schema.MONITORING_LISTENERS_CPU, "store_cpu_s": schema.MONITORING_STORE_CPU,
    "cpu_pct_of_core": schema.MONITORING_CPU_PCT, "points": schema.MONITORING_POINTS,
    "spool_bytes": schema.MONITORING_SPOOL_BYTES, "missed": schema.MONITORING_MISSED}


def monitoring_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (a :func:`radtrack.analysis.data.load_runs` frame): each listener's CPU
    seconds (``<listener>_cpu_s``), the listeners' and the launcher's storing CPU, both as %
    of one core over the run, points and spool bytes stored, deadlines missed. Runs that
    recorded no cost (before it was recorded, or none stored) are left out."""
    if runs.empty or not any(str(c).startswith(_COLUMN) for c in runs.columns):
        # the same schema with no rows (a reader's csv gets its header, json its columns)
        return pd.DataFrame(columns=["run_id", "run_name", *_ROW_FIGURES])
    listeners = sorted({c[len(_COLUMN):].rsplit("/", 1)[0] for c in runs.columns
                        if str(c).startswith(_COLUMN) and str(c).endswith("/cpu_s")})
    out = pd.DataFrame({"run_id": runs["run_id"],
                        "run_name": runs.get("run_name", runs["run_id"])})
    for name in listeners:
        out[f"{name}_cpu_s"] = runs[f"{_COLUMN}{name}/cpu_s"].to_numpy()
    for column, key in _ROW_FIGURES.items():
        out[column] = runs.get(f"metric.{key}", pd.Series(float("nan"), index=runs.index)).to_numpy()
    return out[out["listeners_cpu_s"].notna() | out["store_cpu_s"].notna()].reset_index(drop=True)
