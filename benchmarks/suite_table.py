"""Per-workload table of a suite run (benchmarks/gpu_suite.sh) over each run's steady state.

  python benchmarks/suite_table.py sqlite:///path/mlflow.db [--experiment suite]

The steady-state window of a run starts when it logged its first throughput block (so
CUDA start-up, allocation and autotuning are left out) and ends with the run. Power,
utilisation and SM activity are time-weighted means over that window (radtrack.analysis);
energy per unit of work = mean power / throughput.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from radtrack.analysis import load_runs, load_series  # noqa: E402
from radtrack.compute.summary import windowed_mean  # noqa: E402

UNIT = {"tflops": "TFLOP", "gflops": "GFLOP", "samples_per_s": "sample", "options_per_s": "option",
        "iters_per_s": "iteration", "gbytes_per_s": "GB", "points_per_s": "point",
        "audio_s_per_s": "audio-s", "mpixels_per_s": "Mpixel", "images_per_s": "image"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tracking_uri")
    ap.add_argument("--experiment", default="suite")
    a = ap.parse_args()
    runs = load_runs(a.experiment, tracking_uri=a.tracking_uri)
    runs = runs.sort_values("workload", key=lambda s: s.astype(int))
    print("| workload | throughput (median block) | GPU util % | SM active % | power mean W | "
          "power peak W | energy per unit | window s |")
    print("|---|---|---|---|---|---|---|---|")
    for _, run in runs.iterrows():
        rid = run["run_id"]
        name = Path(str(run.get("param.script", "?"))).stem
        metrics = [c.removeprefix("metric.") for c in runs.columns
                   if c.startswith("metric.throughput_") and run[c] == run[c]]
        series = load_series([rid], tracking_uri=a.tracking_uri)
        primary = next((m for m in metrics if not m.endswith(("gflops",)) or len(metrics) == 1), None)
        if name in ("sgemm", "dgemm", "matmul_loop"):
            primary = "throughput_tflops" if name != "matmul_loop" else "throughput_iters_per_s"
        if name == "fft":
            primary = "throughput_gflops"
        blocks = series[series["metric"] == primary].sort_values("seconds") if primary else series.iloc[:0]
        end = float(series["seconds"].max())
        if blocks.empty:
            print(f"| {name} | no block logged | | | | | | |")
            continue
        start = float(blocks["seconds"].iloc[0])
        values = blocks["value"].iloc[1:].tolist() or blocks["value"].tolist()
        thr = statistics.median(values)

        def wmean(metric: str, series=series, start=start, end=end) -> float:
            if metric not in set(series["metric"]):
                return float("nan")
            return float(windowed_mean(series, metric, start, end).iloc[0])

        power = wmean("smi/gpu0/power_w")
        sub = series[(series["metric"] == "smi/gpu0/power_w") & (series["seconds"] >= start)]
        peak = float(sub["value"].max()) if not sub.empty else float("nan")
        unit = primary.removeprefix("throughput_")
        per = UNIT.get(unit, unit)
        energy = power / thr if thr else float("nan")
        print(f"| {name} | {thr:.4g} {unit} | {wmean('smi/gpu0/gpu_util_pct'):.0f} | "
              f"{wmean('dcgm/gpu0/sm_active_pct'):.0f} | {power:.0f} | {peak:.0f} | "
              f"{energy:.3g} J/{per} | {end - start:.0f} |")


if __name__ == "__main__":
    main()
