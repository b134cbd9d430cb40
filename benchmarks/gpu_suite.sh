#!/usr/bin/env bash
# Run every stressmark of examples/suite.csv on GPU 0 with the smi+dcgm+top listeners into
# a SQLite store under OUTDIR, then print one table row per workload.
#
#   bash benchmarks/gpu_suite.sh OUTDIR [MINUTES_PER_WORKLOAD]
#
# The sheet is copied to OUTDIR/suite.csv (Files made absolute, MaxTime set to
# MINUTES_PER_WORKLOAD, default 0.25): with ~8 s of start-up and teardown per workload the
# 15 workloads take about 6 minutes on an H100. Statuses are written to that copy, so
# running the script again on the same OUTDIR resumes and only runs what has not finished.
# Environment: PYTHON (default python3), GPU_SUITE_LISTENERS (default smi+dcgm+top),
# GPU_SUITE_SHEET (default examples/suite.csv; any sheet of that shape, e.g. a subset).
set -euo pipefail

out=${1:?usage: gpu_suite.sh OUTDIR [MINUTES_PER_WORKLOAD]}
minutes=${2:-0.25}
python=${PYTHON:-python3}
listeners=${GPU_SUITE_LISTENERS:-smi+dcgm+top}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source_sheet=$(realpath "${GPU_SUITE_SHEET:-$repo/examples/suite.csv}")

mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true RADTRACK_HOME="$out/.radtrack"
uri="sqlite:///$out/mlflow.db"
sheet="$out/suite.csv"

if [[ -e $sheet ]]; then
  echo "gpu_suite: resuming $sheet (delete it to start over)"
else
  "$python" - "$source_sheet" "$sheet" "$minutes" "$listeners" <<'PY'
import csv
import sys
from pathlib import Path

src, dst, minutes, listeners = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
if not float(minutes) > 0:
    sys.exit(f"gpu_suite: MINUTES_PER_WORKLOAD must be a positive number, got {minutes!r}")
lines = [line for line in src.read_text().splitlines() if not line.startswith("#")]
rows = list(csv.DictReader(lines))
with dst.open("w", newline="") as f:
    out = csv.DictWriter(f, list(rows[0]))
    out.writeheader()
    for row in rows:
        row["File"] = str((src.parent / row["File"]).resolve())
        row.update(MaxTime=minutes, Listeners=listeners, Status="", Run="")
        out.writerow(row)
print(f"gpu_suite: {len(rows)} workloads, at most {minutes} min each -> {dst}")
PY
fi

cd "$out"
start=$(date +%s)
status=0
"$python" -m radtrack --tracking-uri "$uri" "$sheet" 2>&1 | tee -a "$out/radtrack.log" \
  || status=$?
echo "gpu_suite: radtrack exited $status after $(( $(date +%s) - start )) s"

# One row per workload: median block throughput (the first block, which includes warm-up
# effects such as cuDNN autotuning, is left out when there are others) and listener summaries.
"$python" - "$uri" "$sheet" <<'PY'
import csv
import statistics
import sys
from pathlib import Path

from mlflow import MlflowClient

# The metric each workload is judged by (the others are in the store too).
PRIMARY = {"sgemm": "throughput_tflops", "dgemm": "throughput_tflops",
           "matmul_loop": "throughput_iters_per_s", "blackscholes": "throughput_options_per_s",
           "montecarlo_options": "throughput_options_per_s", "euclidean": "throughput_gbytes_per_s",
           "kmeans": "throughput_points_per_s", "fft": "throughput_gflops",
           "spectrogram": "throughput_audio_s_per_s", "sepia": "throughput_mpixels_per_s"}

client = MlflowClient(sys.argv[1])
with open(sys.argv[2], newline="") as f:
    experiments = {row["Experiment"] for row in csv.DictReader(f)}
runs = []
for name in sorted(experiments):
    exp = client.get_experiment_by_name(name)
    if exp is None:
        print(f"gpu_suite: no experiment {name!r} in the store", file=sys.stderr)
        continue
    runs += [r for r in client.search_runs([exp.experiment_id])
             if r.data.tags.get("radtrack.role") == "row"]
runs.sort(key=lambda r: int(r.data.tags.get("radtrack.workload", 0)))
print("| workload | status | throughput metric | median | blocks used | GPU power mean W | "
      "GPU power max W | SM active mean % | GPU util mean % | duration s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in runs:
    m = r.data.metrics
    name = Path(r.data.params.get("script", "?")).stem
    primary = PRIMARY.get(name, "throughput_samples_per_s")
    history = sorted(client.get_metric_history(r.info.run_id, primary), key=lambda h: h.step)
    values = [h.value for h in history[1:]] or [h.value for h in history]

    def cell(key: str) -> str:
        return f"{m[key]:.1f}" if key in m else "-"

    median = f"{statistics.median(values):.4g}" if values else "-"
    status = r.info.status + (f" ({r.data.tags['radtrack.stopped_by']})"
                              if "radtrack.stopped_by" in r.data.tags else "")
    print(f"| {name} | {status} | {primary} | {median} | {len(values)} | "
          f"{cell('summary/smi/gpu0/power_w/mean')} | {cell('summary/smi/gpu0/power_w/max')} | "
          f"{cell('summary/dcgm/gpu0/sm_active_pct/mean')} | "
          f"{cell('summary/smi/gpu0/gpu_util_pct/mean')} | {cell('summary/duration_s')} |")
PY
exit "$status"
