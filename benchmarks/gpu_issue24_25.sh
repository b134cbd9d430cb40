#!/usr/bin/env bash
# One device call for issues 23-25 (H100): install, the gpu tests, fixed cost before/after.
#   bash benchmarks/gpu_issue24_25.sh OUTDIR [SECTIONS]   (sections: tests,fixed; default both)
# Needs .whl (wheels the host lacks) and .base (the tree before this session: git archive
# f2df35b) carried next to the checkout.
set -uo pipefail
out=${1:?usage: gpu_issue24_25.sh OUTDIR [SECTIONS]}; sections=${2:-tests,fixed}
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/basepkgs ./.base 2>&1 | tail -3
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -V
  python3 -c "import mlflow, torch; print('mlflow', mlflow.__version__, 'torch', torch.__version__)"
  nproc; date -u; } > "$out/host.txt" 2>&1
cat "$out/host.txt"
if [[ $sections == *tests* ]]; then
  timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 240 tests/ 2>&1 | tee "$out/gpu_tests.log" | tail -25
fi
if [[ $sections == *fixed* ]]; then
  python3 benchmarks/fixed_cost.py --repeats 4 --modes plain,none,top,smi,smi+dcgm+top \
    --tree /tmp/basepkgs --label "f2df35b (before this session)" --json "$out/fixed-before.json" 2>&1 | tee "$out/fixed.txt"
  python3 benchmarks/fixed_cost.py --repeats 4 --modes plain,none,top,smi,smi+dcgm+top \
    --label "this tree" --json "$out/fixed-after.json" 2>&1 | tee -a "$out/fixed.txt"
fi
