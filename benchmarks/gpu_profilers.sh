#!/usr/bin/env bash
# One device call: the profilers' cost inside their NVTX range (benchmarks/overhead_ab.py -l ncu),
# light then heavy workload; nsys too where it is installed.
#   bash benchmarks/gpu_profilers.sh OUTDIR
# $LIGHT_PAIRS x 2 phases of $LIGHT_PHASE_S (default 3 x 10 s), $HEAVY_PAIRS x 2 of
# $HEAVY_PHASE_S (default 2 x 25 s); $HEAVY_NCU_ARGS (default "--section SpeedOfLight": one
# section, fewer replay passes, so that whole ResNet-50 steps fit inside a phase);
# each run's limit $LIGHT_S / $HEAVY_S (default 140 / 180 s; a run stopped there records
# what it measured, marked interrupted). Results: OUTDIR/overhead_ab-profilers.json, logs beside it.
set -uo pipefail
out=${1:?usage: gpu_profilers.sh OUTDIR}
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
python3 -m compileall -q radtrack listeners > /dev/null
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -V; nproc
  ncu --version 2>&1 | tail -1; command -v nsys || echo "no nsys"; date -u; } > "$out/host.txt" 2>&1
cat "$out/host.txt"
json="$out/overhead_ab-profilers.json"
for tool in ncu nsys; do
  command -v "$tool" > /dev/null || continue
  timeout "${LIGHT_S:-140}" python3 benchmarks/overhead_ab.py --workload light -l "$tool" \
    --pairs "${LIGHT_PAIRS:-3}" --phase-s "${LIGHT_PHASE_S:-10}" --warmup-s 3 --out "$json" \
    2>&1 | tee -a "$out/profilers.log" | tail -8
  RADTRACK_NCU_ARGS=${HEAVY_NCU_ARGS:---section SpeedOfLight} timeout "${HEAVY_S:-180}" \
    python3 benchmarks/overhead_ab.py --workload heavy -l "$tool" --pairs "${HEAVY_PAIRS:-2}" \
    --phase-s "${HEAVY_PHASE_S:-25}" --warmup-s 3 --out "$json" 2>&1 | tee -a "$out/profilers.log" | tail -8
done
python3 benchmarks/overhead_ab.py --report --out "$json" 2>&1 | tee "$out/profilers-report.txt"
