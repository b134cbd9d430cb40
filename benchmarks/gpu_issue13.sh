#!/usr/bin/env bash
# Issue 13 (listener overhead, shared NVML sampler) on the GPU host in one device call:
#
#   bash benchmarks/gpu_issue13.sh OUTDIR        # BUDGET_S (default 550) bounds the whole call
#
# (a) pytest -m gpu tests/listeners/test_gpu_listeners.py (the shared sampler's GPU test included),
# (b) benchmarks/listeners.py --sections each,collectors at 0.1 s under the bf16 matmul load:
#     the collectors section runs smi+dcgm both in one shared sampler process (the default)
#     and in separate processes (RADTRACK_SHARED_SAMPLER=0), side by side in this call,
# (c) benchmarks/overhead.py, heavy workload, modes none and all@0.1 (+ bare), as many
#     alternating rounds as the time left allows (--budget-s), then its report.
# Writes at most 7 files to OUTDIR. Changes no GPU setting; quits any MPS daemon left.
# Installs from .whl (where .whl and the tree exceed a call's 64 MiB, carry a smaller copy and
# `ln -sfn COPY .whl` first: benchmarks/results/h100-2026-11-23c/README.md).
set -uo pipefail
out=${1:?usage: gpu_issue13.sh OUTDIR}
end=$((SECONDS + ${BUDGET_S:-550}))
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
cleanup() { pkill -f '^(/[^ ]*/)?nvidia-cuda-mps-(control|server)' >/dev/null 2>&1; true; }
trap cleanup EXIT
stamp() { echo "=== $1 $(date -u +%T) (t=${SECONDS}s, load $(cut -d' ' -f1-3 /proc/loadavg))"; }

stamp install
python3 -m pip install -q --no-index --find-links .whl --no-build-isolation -e . >"$out/host.txt" 2>&1 \
  || { tail -20 "$out/host.txt"; exit 1; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv;
  python3 -c 'import sys,torch,mlflow,pynvml; print(sys.version); print("torch", torch.__version__, "mlflow", mlflow.__version__)';
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread)'; date -u; nproc; command -v dcgmi || echo "no dcgmi";
  python3 -m radtrack listeners; } >>"$out/host.txt" 2>&1
cat "$out/host.txt"

stamp "(a) tests/listeners/test_gpu_listeners.py"
timeout 150 python3 -m pytest -q -rA -m gpu -p no:cacheprovider tests/listeners/test_gpu_listeners.py 2>&1 \
  | tee "$out/gpu_listeners.log" | tail -25

stamp "(b) listeners.py each,collectors"
tmp=$(mktemp -d)
timeout $((end - SECONDS - 100)) python3 benchmarks/listeners.py --out "$tmp" --duration 20 --interval 0.1 \
  --gpu-load --sections each,collectors 2>&1 | grep -v ' INFO ' | tee "$out/listeners.log"
cp "$tmp/listeners.json" "$out/listeners.json" 2>/dev/null

left=$((end - SECONDS - 15))
stamp "(c) overhead.py heavy none,all@0.1 (${left}s left)"
if ((left > 60)); then
  timeout "$left" python3 benchmarks/overhead.py --workloads heavy --modes none,all@0.1 --repeats 5 \
    --budget-s $((left - 10)) --out "$out/overhead.json" 2>&1 | tee "$out/overhead.log"
  python3 benchmarks/overhead.py --report --workloads heavy --out "$out/overhead.json" 2>&1 \
    | tee -a "$out/overhead.log"
fi
stamp done
cleanup
