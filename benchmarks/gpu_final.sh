#!/usr/bin/env bash
# One device call (H100) for the end of a session: install, then the sections asked for.
#   bash benchmarks/gpu_final.sh OUTDIR [SECTIONS]   (tests, fixed; default tests)
# tests: every `gpu` test of $TESTS (default tests/) (-v, log in OUTDIR/gpu_tests.log); fixed: benchmarks/fixed_cost.py
# (plain, none, smi, smi+dcgm+top; 3 repeats) and benchmarks/phase_profile.py into a new and
# an existing SQLite store.
set -uo pipefail
out=${1:?usage: gpu_final.sh OUTDIR [SECTIONS]}; sections=${2:-tests}
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -V; nproc
  uptime; date -u; git log --oneline -1 2>/dev/null; } > "$out/host.txt" 2>&1
cat "$out/host.txt"
if [[ $sections == *tests* ]]; then
  timeout "${TESTS_S:-470}" python3 -m pytest -v -m gpu -p no:cacheprovider --timeout 300 -rs ${TESTS:-tests/} 2>&1 \
    | tee "$out/gpu_tests.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" | tail -60
fi
if [[ $sections == *fixed* ]]; then
  python3 benchmarks/fixed_cost.py --repeats 3 --modes plain,none,smi,smi+dcgm+top \
    --json "$out/fixed.json" 2>&1 | tee "$out/fixed.txt" | tail -12
  work=$(mktemp -d)
  for store in new existing; do
    [ "$store" = new ] && rm -f "$work/mlflow.db"
    (cd "$work" && rm -f m.txt && python3 "$OLDPWD/benchmarks/phase_profile.py" "$out/profile-smi-$store.json" \
      --markers m.txt -- -l smi "$OLDPWD/tests/scripts/marker_sleep.py" "$work/m.txt" > "$out/profile-smi-$store.log" 2>&1)
  done
fi
