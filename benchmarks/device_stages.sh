#!/usr/bin/env bash
# One call on the GPU host: install from the carried wheelhouse, then the named stages.
#   bash benchmarks/device_stages.sh OUTDIR tests|bench|suite|accounting|studies ...
# Logs go to OUTDIR. Never changes GPU settings; quits any MPS daemon it may have left.
set -uo pipefail
out=${1:?usage: device_stages.sh OUTDIR STAGE...}; shift
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
# anchored: a shell whose command line merely mentions the daemon must not be killed
cleanup() { pkill -f '^(/[^ ]*/)?nvidia-cuda-mps-(control|server)' >/dev/null 2>&1; true; }
trap cleanup EXIT
python3 -m pip install -q --no-index --find-links .whl --no-build-isolation -e . >"$out/install.log" 2>&1 \
  || { tail -20 "$out/install.log"; exit 1; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv;
  python3 -c 'import sys,torch,mlflow,pynvml; print(sys.version); print("torch", torch.__version__, "mlflow", mlflow.__version__)';
  date -u; nproc; } >"$out/host.txt" 2>&1
cat "$out/host.txt"
for stage in "$@"; do
  echo "=== $stage $(date -u +%T)"
  case $stage in
    tests)
      python3 -m radtrack listeners 2>&1 | tee "$out/listeners.txt"
      timeout 540 python3 -m pytest -q -rA -m gpu -p no:cacheprovider tests 2>&1 | tee "$out/gpu_tests.log" | tail -40 ;;
    bench)
      timeout 560 python3 benchmarks/listeners.py --out "$out" --duration 20 --gpu-load \
        --power-seconds "${POWER_SECONDS:-20}" \
        --sections "${BENCH_SECTIONS:-sink,profile,each,collectors,power}" 2>&1 \
        | grep -v ' INFO ' | tee "$out/bench_listeners.log" ;;
    accounting)
      timeout 400 python3 benchmarks/colocation_accounting.py --out "$out/accounting" \
        --seconds "${ACCOUNTING_SECONDS:-30}" ${ACCOUNTING_ARGS:-} 2>&1 \
        | grep -v ' INFO ' | tee "$out/accounting.log" | tail -60
      cp "$out/accounting/accounting.json" "$out/" 2>/dev/null
      tar czf "$out/accounting-store.tgz" -C "$out" --exclude=accounting/.radtrack accounting \
        && rm -rf "$out/accounting" ;;
    studies)
      # the four studies' short versions (benchmarks/studies_gpu.sh), about 8.5 minutes
      timeout 545 bash benchmarks/studies_gpu.sh "$out" 2>&1 | tee "$out/studies.log" | tail -150 ;;
    suite1|suite2)
      # half of examples/suite.csv per call (a call is limited to 10 minutes)
      part=examples/.suite-$stage.csv
      { grep -v '^#' examples/suite.csv | head -1
        if [ $stage = suite1 ]; then grep -v '^#' examples/suite.csv | sed -n '2,8p'
        else grep -v '^#' examples/suite.csv | sed -n '9,16p'; fi; } > "$part"
      GPU_SUITE_SHEET=$part timeout 420 bash benchmarks/gpu_suite.sh "$out/$stage" "${SUITE_MINUTES:-0.5}" 2>&1 | tail -30 | tee "$out/$stage.log"
      tar czf "$out/$stage.tgz" -C "$out" --exclude=$stage/.radtrack $stage && rm -rf "$out/$stage" ;;
    suite)
      timeout 540 bash benchmarks/gpu_suite.sh "$out/suite" 2>&1 | tail -60 | tee "$out/suite.log"
      tar czf "$out/suite.tgz" -C "$out" --exclude=suite/.radtrack suite && rm -rf "$out/suite" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
cleanup
