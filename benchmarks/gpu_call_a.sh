#!/usr/bin/env bash
# Device call (H100): the co-location accounting GPU test and where a launch's fixed cost goes.
#   bash benchmarks/gpu_call_a.sh OUTDIR
set -uo pipefail
out=${1:?usage: gpu_call_a.sh OUTDIR}
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -V; nproc; date -u; } > "$out/host.txt" 2>&1
work=$(mktemp -d); cp tests/scripts/marker_sleep.py "$work/s.py"
for mode in none smi; do
  (cd "$work" && rm -f m.txt && python3 "$OLDPWD/benchmarks/phase_profile.py" "$out/profile-$mode.json" --markers m.txt -- -l "$mode" s.py "$work/m.txt" > "$out/profile-$mode.log" 2>&1)
done
timeout 300 python3 -m pytest -v -m gpu -p no:cacheprovider tests/postrun/test_gpu_attribution.py -k resnet_bert 2>&1 | tee "$out/gpu_attribution.log" | tail -15
