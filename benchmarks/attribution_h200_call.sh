#!/usr/bin/env bash
# Issue 51's second GPU round in one device call of at most LIMIT_S seconds (default 530):
#   1. benchmarks/power_sensor.py --quick (the GPU's sensor: update period, how much of each
#      update it sees, edge timing), while the wheels install on the CPU beside it;
#   2. the `gpu` tests tests/postrun/test_gpu_split.py and test_gpu_attribution.py (their
#      stores kept under --basetemp: test_gpu_split's twins + counter reader, and
#      test_gpu_attribution's resnet + bert solo, time-sliced and MPS at 0.5 min);
#   3. benchmarks/attribution_gpu.sh with benchmarks/attribution_mixed_h200.csv (sgemm,
#      euclidean, bert solo; sgemm + euclidean and bert + sgemm time-sliced and under MPS)
#      in whatever time is left, so a slow stage shortens the last one instead of losing all.
#
#   bash benchmarks/attribution_h200_call.sh OUTDIR
#
# OUTDIR gets at most 7 files (the device tool returns 8): call.log, nvidia-smi.txt,
# sensor.tar.xz, gpu_tests.log, tests.tar.xz, mixed.tar. Never changes a GPU setting;
# radtrack quits the MPS daemons it starts, attribution_gpu.sh any left over.
set -uo pipefail
out=${1:?usage: attribution_h200_call.sh OUTDIR}
limit=${LIMIT_S:-525}
t0=$(date +%s)
left() { echo $(( limit - ($(date +%s) - t0) )); }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
exec > >(tee -a "$out/call.log") 2>&1
nvidia-smi -q > "$out/nvidia-smi.txt" 2>&1
echo "call: start $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
# 1. the sensor (GPU) beside the install (CPU only)
python3 benchmarks/power_sensor.py --out /tmp/sensor --quick > /tmp/sensor.log 2>&1 &
sensor=$!
{ python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl \
    && python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . \
    && python3 -m compileall -q radtrack listeners > /dev/null; } 2>&1 | tail -3
echo "call: installed at $(( $(date +%s) - t0 )) s"
wait "$sensor"; echo "call: power_sensor exited $? at $(( $(date +%s) - t0 )) s"
cp /tmp/sensor.log /tmp/sensor/
tar -cJf "$out/sensor.tar.xz" -C /tmp sensor
# 2. the gpu tests (stores kept)
timeout $(( $(left) - 140 )) python3 -m pytest -v -m gpu -p no:cacheprovider -n 0 --timeout 400 -rs \
  --basetemp=/tmp/pt tests/postrun/test_gpu_split.py tests/postrun/test_gpu_attribution.py \
  > "$out/gpu_tests.log" 2>&1
echo "call: gpu tests exited $? at $(( $(date +%s) - t0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$out/gpu_tests.log" | tail -8
for pipe in $(find /tmp/pt -type d -name pipe 2>/dev/null); do
  CUDA_MPS_PIPE_DIRECTORY=$pipe timeout 20 nvidia-cuda-mps-control <<< quit 2>/dev/null || true
done
tar -cJf "$out/tests.tar.xz" --exclude=.radtrack -C /tmp pt 2>/dev/null
# 3. the mixed pairs in what is left (30 s kept for packing)
run_s=$(( $(left) - 30 ))
if (( run_s > 60 )); then
  SHEET=benchmarks/attribution_mixed_h200.csv bash benchmarks/attribution_gpu.sh /tmp/mixed "$run_s" | tail -12
  tar -cf "$out/mixed.tar" -C /tmp mixed
else
  echo "call: no time left for the mixed pairs ($run_s s)"
fi
echo "call: done at $(( $(date +%s) - t0 )) s"
