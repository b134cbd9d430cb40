"""time-to-accuracy: the same training configuration repeated until a logged accuracy
reaches a target (examples/studies/time-to-accuracy/).

- ``runs``: per run, the first time (seconds since the run started, start-up included) and
  step at which the metric reached the target (:func:`radtrack.analysis.time_to_target`),
  the last value logged, and the GPU utilisation averaged over the first 3 minutes
  (:func:`radtrack.analysis.windowed_mean` over run seconds 0-180, over the run's GPUs);
- ``summary``: per configuration (File + params) and GPU model, the number of runs, how
  many reached the target, and the mean, standard deviation and coefficient of variation of
  their time to target (runs that never reached it are left out of those, and counted);
- ``utilisation``: the GPU utilisation series of the first 3 minutes on a 1-s grid
  (:func:`radtrack.compute.resample.resample`: the mean over each second), one column per run.

The target is ``val_acc >= 0.92`` unless ``--target METRIC=VALUE`` says otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.analysis.studies import StudyResult
from radtrack.analysis.studies.windows import study_runs, study_series
from radtrack.compute.configs import with_config
from radtrack.compute.resample import resample
from radtrack.compute.summary import QUANTITIES, _keys_for, coefficient_of_variation, windowed_mean
from radtrack.compute.variability import time_to_target
from radtrack.errors import RadtrackError

DEFAULT_TARGET = ("val_acc", 0.92)
FIRST_S = 180.0
UTIL = r"[^/]+/gpu\d+/gpu_util_pct"  # any listener's; one per GPU is kept, by declaration


def _util_key(keys: list[str]) -> list[str]:
    """Each GPU's utilisation series, from the listener of the highest declared priority."""
    return _keys_for(next(q for q in QUANTITIES if q.name == "gpu_util_pct"), keys)


def study(experiment: str, workload: int | None = None, tracking_uri: str | None = None,
          target: tuple[str, float] | None = None) -> StudyResult:
    metric, value = target or DEFAULT_TARGET
    runs = study_runs(experiment, workload, tracking_uri, "time-to-accuracy")
    series = study_series(runs, [UTIL, _escape(metric)], tracking_uri)
    if not (series["metric"] == metric).any():
        raise RadtrackError(f"no run of experiment {experiment!r} logged {metric!r}; "
                            f"give the accuracy metric with --target METRIC=VALUE")
    reached = time_to_target(series, metric, value, "max").set_index("run_id")
    configured = with_config(runs)
    util_keys = _util_key(list(series["metric"].unique()))
    rows = []
    for _, run in configured.iterrows():
        run_id = run["run_id"]
        one = series[series["run_id"] == run_id]
        acc = one[one["metric"] == metric].sort_values("seconds")
        utils = [windowed_mean(one, k, 0.0, FIRST_S).get(run_id, np.nan) for k in util_keys]
        utils = [u for u in utils if not np.isnan(u)]
        hit = reached.loc[run_id] if run_id in reached.index else None
        rows.append({
            "workload": run["workload"], "run_name": run["run_name"], "status": run["status"],
            "script": run["script"], "params": run["params"], "gpu": run["gpu"],
            "time_to_target_s": float(hit["seconds"]) if hit is not None else np.nan,
            "time_to_target_step": float(hit["step"]) if hit is not None else np.nan,
            f"last_{metric}": float(acc["value"].iloc[-1]) if len(acc) else np.nan,
            "duration_s": run["duration_s"],
            "gpu_util_pct_first_3min": float(np.mean(utils)) if utils else np.nan,
            "run_id": run_id,
        })
    table = pd.DataFrame(rows)
    finished = table[table["status"] == "FINISHED"]
    summary = []
    for (script, params, gpu), group in finished.groupby(["script", "params", "gpu"], sort=True):
        times = group["time_to_target_s"].dropna()
        summary.append({
            "script": script, "params": params, "gpu": gpu, "runs": len(group),
            "reached": len(times), "target": f"{metric} >= {value:g}",
            "time_to_target_s_mean": float(times.mean()) if len(times) else np.nan,
            "time_to_target_s_std": float(times.std(ddof=1)) if len(times) > 1 else np.nan,
            "time_to_target_s_cv": coefficient_of_variation(times),
            "gpu_util_pct_first_3min_mean": float(group["gpu_util_pct_first_3min"].mean()),
        })
    notes = [f"target: {metric} >= {value:g}; times are seconds since each run started"]
    if not util_keys:
        notes.append("no GPU utilisation readings (no listener declaring one ran, or no GPU)")
    tables = {"runs": table, "summary": pd.DataFrame(summary), "utilisation": _series(series, util_keys, runs)}
    titles = {"runs": f"Time to {metric} >= {value:g} per run",
              "summary": "Time to target per configuration and GPU model (CV = std / mean)",
              "utilisation": "GPU utilisation over the first 3 minutes, 1-s means (%)"}
    return StudyResult("time-to-accuracy", experiment, tables, titles, notes)


def _escape(metric: str) -> str:
    import re

    return re.escape(metric)


def _series(series: pd.DataFrame, keys: list[str], runs: pd.DataFrame) -> pd.DataFrame:
    """1-s means of GPU utilisation over the first 3 minutes: seconds, one column per run."""
    util = series[series["metric"].isin(keys) & (series["seconds"] < FIRST_S)
                  & (series["seconds"] >= 0)]
    if util.empty:
        return pd.DataFrame(columns=["seconds"])
    # several GPUs of one run: their mean, as in the runs table
    util = util.assign(metric="gpu_util_pct")
    wide = resample(util, 1.0)
    names = dict(zip(runs["run_id"], runs["run_name"], strict=True))
    table = wide.pivot(index="seconds", columns="run_id", values="gpu_util_pct")
    table = table[[r for r in runs["run_id"] if r in table.columns]]  # in run order
    table.columns = [names.get(c, c) for c in table.columns]
    return table.reset_index()
