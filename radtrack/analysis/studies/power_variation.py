"""power-variation: how power, SM clock and temperature vary when one GEMM runs solo, as
2 or 3 time-shared copies, under MPS, one copy per GPU (space-sharing), or with locked
clocks (examples/studies/power-variation/).

One row per workload (configuration) and physical GPU, over the steady window every copy
on that GPU is in (radtrack/analysis/studies/windows.py): time-weighted mean, coefficient
of variation and 5th-95th percentile of power, SM clock and temperature; throughput per
copy (mean of the copies' block rates after the first block) and in total; energy per
unit of work = mean power / total rate (W / (TFLOP/s) = J/TFLOP).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.analysis.studies import StudyResult
from radtrack.analysis.studies.windows import (
    gpu_key,
    gpu_scopes,
    logged_mean,
    overlap,
    steady_window,
    study_runs,
    study_series,
    tag,
    throughput_key,
    window_stats,
)
from radtrack.compute.summary import work_unit
from radtrack.vocab import schema
from radtrack.vocab.device_identity import device_fact

SIGNALS = ("power_w", "sm_clock_mhz", "temp_c")
WANTED = [r"[^/]+/gpu\d+/(?:power_w|sm_clock_mhz|temp_c)", r"throughput_.+"]  # any listener's
COLUMNS = (["workload", "configuration", "collocation", "clocks", "copies", "gpu", "window_s"]
           + [f"{s}_{stat}" for s in SIGNALS for stat in ("mean", "cv", "p5", "p95")]
           + ["throughput_metric", "throughput_per_copy", "throughput_total", "work_unit",
              "energy_per_unit_j", "runs", "window_rule"])


def configuration(collocation: str, copies: int, gpus: int, clocks: str) -> str:
    """A readable name: solo, time-shared x2, MPS x3, space-shared x2 GPUs, @ 1410 MHz."""
    kind = collocation.split(":")[0].lower()
    if gpus > 1 and copies == 1:
        name = f"space-shared x{gpus} GPUs"
    elif copies == 1:
        name = "solo"
    elif kind == "mps":
        name = f"MPS x{copies}"
    else:
        name = f"time-shared x{copies}"
    return f"{name} @ {clocks} MHz" if clocks not in ("-", "") else name


def _physical(row: pd.Series, scope: str) -> str:
    """The GPU behind a run's ``gpuN``: its UUID tag where one was recorded."""
    tags = {k: v for k, v in row.items() if isinstance(k, str) and k.startswith("tag.")}
    uuid = device_fact(tags, scope, "uuid") or ""
    return uuid or f"{tag(row, schema.DEVICES)}:{scope}"


def study(experiment: str, workload: int | None = None, tracking_uri: str | None = None,
          target: tuple[str, float] | None = None) -> StudyResult:
    runs = study_runs(experiment, workload, tracking_uri, "power-variation")
    runs = runs[runs["status"] == "FINISHED"]
    series = study_series(runs, WANTED, tracking_uri)
    notes: list[str] = []
    rows = []
    by_run = {run_id: one for run_id, one in series.groupby("run_id")}
    for wl, group in runs.groupby("workload", sort=True):
        # which runs used which physical GPU (a time-shared pair: both on one)
        on_gpu: dict[str, list[tuple[pd.Series, str]]] = {}
        for _, row in group.iterrows():
            one = by_run.get(row["run_id"])
            keys = [] if one is None else list(one["metric"].unique())
            for scope in gpu_scopes(keys) or ["-"]:
                on_gpu.setdefault(_physical(row, scope) if scope != "-" else "-",
                                  []).append((row, scope))
        gpus = len([g for g in on_gpu if g != "-"])
        for gpu, members in on_gpu.items():
            rows.append(_row(int(wl), gpu, members, gpus, by_run))
    if not rows:
        notes.append("no FINISHED runs")
    table = pd.DataFrame(rows, columns=COLUMNS)
    if table["power_w_mean"].isna().all() and len(table):
        notes.append("no GPU power readings (no listener declaring a GPU's power ran, or no GPU): GPU "
                     "columns are empty")
    return StudyResult("power-variation", experiment, {"configurations": table},
                       {"configurations": "Power, SM clock and temperature in steady state, "
                                          "per configuration and GPU"}, notes)


def _row(workload: int, gpu: str, members: list[tuple[pd.Series, str]], gpus: int,
         by_run: dict[str, pd.DataFrame]) -> dict[str, object]:
    first = members[0][0]
    empty = pd.DataFrame(columns=["metric", "t", "value"])
    frames = [by_run.get(row["run_id"], empty) for row, _ in members]
    windows = [steady_window(f)[:2] for f in frames if len(f)]
    windows = [w for w in windows if not np.isnan(w[0])]
    rules = {steady_window(f)[2] for f in frames if len(f)}
    start, end = overlap(windows) if windows else (float("nan"), float("nan"))
    out: dict[str, object] = {
        "workload": workload, "collocation": str(first.get("collocation") or "-"),
        "clocks": tag(first, schema.CLOCKS), "copies": len(members), "gpu": gpu,
        "window_s": end - start, "runs": ",".join(str(r["run_name"]) for r, _ in members),
        "window_rule": ", ".join(sorted(rules)) or "-",
    }
    out["configuration"] = configuration(str(out["collocation"]), len(members), gpus,
                                          str(out["clocks"]))
    # the GPU's own readings: every copy sees the same device, the first one is read
    one, scope = frames[0], members[0][1]
    for signal in SIGNALS:
        key = gpu_key(one["metric"].unique(), scope, signal) if scope != "-" else None
        sample = one[one["metric"] == key] if key else one.iloc[0:0]
        stats = window_stats(sample["t"].to_numpy(float), sample["value"].to_numpy(float),
                             start, end)
        out.update({f"{signal}_{k}": v for k, v in stats.items()})
    rate_key = throughput_key(one["metric"].unique()) if len(one) else None
    rates = [logged_mean(f, rate_key, start, end) for f in frames]
    out["throughput_metric"] = rate_key or "-"
    out["throughput_per_copy"] = float(np.nanmean(rates)) if rate_key and any(
        not np.isnan(r) for r in rates) else float("nan")
    out["throughput_total"] = float(np.nansum(rates)) if rate_key else float("nan")
    out["work_unit"] = (work_unit(rate_key) if rate_key else None) or "-"
    total = float(out["throughput_total"])
    out["energy_per_unit_j"] = (float(out["power_w_mean"]) / total
                                if total and not np.isnan(total) and out["work_unit"] != "-"
                                else float("nan"))
    return out
