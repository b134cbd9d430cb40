"""multi-level-utilisation: what "GPU utilisation" hides (examples/studies/multi-level-utilisation/).

For each run (a training workload at one precision), the steady-state means
(radtrack/analysis/studies/windows.py) of five levels of the same GPU's activity, side by
side, from the coarsest to the finest:

- ``gpu_util_pct``: NVML's utilisation, the share of time *any* kernel ran;
- ``sm_active_pct``: the share of cycles an SM had at least one warp resident (GPM/DCGM);
- ``sm_occupancy_pct``: resident warps over the maximum, averaged over SMs;
- ``tensor_active_pct``: cycles the tensor pipes were busy;
- ``dram_active_pct``: cycles the memory interface was busy.

``util_over_sm_active`` is their ratio: how much the GPU-level figure overstates SM use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.analysis.studies import StudyResult
from radtrack.analysis.studies.windows import (
    gpu_key,
    gpu_scopes,
    logged_mean,
    param,
    steady_window,
    study_runs,
    study_series,
    throughput_key,
    window_mean,
)

LEVELS = ("gpu_util_pct", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
          "dram_active_pct")
WANTED = [rf"[^/]+/gpu\d+/{level}" for level in LEVELS] + [r"throughput_.+"]  # any listener's
COLUMNS = (["workload", "script", "dtype", "run_name", "status", "gpu", "window_s"]
           + list(LEVELS) + ["util_over_sm_active", "throughput_metric", "throughput",
                             "window_rule"])


def study(experiment: str, workload: int | None = None, tracking_uri: str | None = None,
          target: tuple[str, float] | None = None) -> StudyResult:
    runs = study_runs(experiment, workload, tracking_uri, "multi-level-utilisation")
    series = study_series(runs, WANTED, tracking_uri)
    by_run = {run_id: one for run_id, one in series.groupby("run_id")}
    empty = series.iloc[0:0]
    rows = []
    for _, run in runs.iterrows():
        one = by_run.get(run["run_id"], empty)
        keys = list(one["metric"].unique())
        scopes = gpu_scopes(keys)
        start, end, rule = steady_window(one)
        row: dict[str, object] = {
            "workload": run["workload"], "script": run["script"],
            "dtype": param(run, "dtype", "default"), "run_name": run["run_name"],
            "status": run["status"], "gpu": ",".join(scopes) or "-",
            "window_s": end - start, "window_rule": rule,
        }
        for level in LEVELS:
            # a run on several GPUs: the mean over them
            values = [window_mean(one, gpu_key(keys, s, level), start, end) for s in scopes]
            values = [v for v in values if not np.isnan(v)]
            row[level] = float(np.mean(values)) if values else float("nan")
        sm = row["sm_active_pct"]
        row["util_over_sm_active"] = (row["gpu_util_pct"] / sm  # type: ignore[operator]
                                      if isinstance(sm, float) and sm > 0 else float("nan"))
        rate = throughput_key(keys)
        row["throughput_metric"] = rate or "-"
        row["throughput"] = logged_mean(one, rate, start, end)
        rows.append(row)
    table = pd.DataFrame(rows, columns=COLUMNS).sort_values(["script", "dtype", "workload"],
                                                            kind="stable")
    notes = []
    missing = [lv for lv in LEVELS if table[lv].isna().all()]
    if missing and len(table):
        notes.append(f"no readings of {', '.join(missing)} (they need the smi and dcgm "
                     "listeners on a GPU; dcgm falls back to NVML GPM on Hopper)")
    return StudyResult("multi-level-utilisation", experiment,
                       {"levels": table.reset_index(drop=True)},
                       {"levels": "GPU utilisation vs SM active, occupancy, tensor and DRAM "
                                  "activity, steady-state means (%)"}, notes)
