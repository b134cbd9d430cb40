#!/usr/bin/env bash
# One device call (H100, H200) for the end of a session: install, then the sections asked for.
#   bash benchmarks/device_call.sh OUTDIR [SECTIONS]   (tests, fixed, lcpu, ab; default tests)
# tests: every `gpu` test of $TESTS (default tests/) (-v, log in OUTDIR/gpu_tests.log);
# fixed: benchmarks/fixed_cost.py ($FIXED_MODES, default plain and none, smi, smi+dcgm+top
#   each waiting for its end and with the detached end; $FIXED_REPEATS, default 3) and
#   benchmarks/phase_profile.py into a new and an existing SQLite store ($PROFILE=0 skips it);
# lcpu: benchmarks/listener_cpu_ab.sh against the tree in .lcpu-before ($LCPU_ROUNDS rounds,
#   default 2; $SETS, $SECONDS_PER_SET as there), tables in OUTDIR/lcpu/listener_cpu.md;
# ab: benchmarks/overhead_ab.py with $AB_ARGS (appended to OUTDIR/overhead_ab.json);
# server: benchmarks/fixed_cost.py into a local `mlflow server` (tests/servers.py, SQLite
#   backend; $SERVER_MODES, default plain and none, top, smi, smi+dcgm+top detached), OUTDIR/server.*;
# sprofile: benchmarks/sampler_profile.py under the bursty matmul for each of $PROFILE_SETS
#   (default smi+top, smi+top+dcgm@1, smi+dcgm+top; $PROFILE_S seconds each), OUTDIR/sprofile-*.json;
# startab: benchmarks/fixed_cost.py on the tree in .fixed-before ($START_BEFORE_MODES) and on
#   this one ($START_MODES), $FIXED_REPEATS each (OUTDIR/start-{before,after}.{txt,json}),
#   after the host's Python set-up (PYTHON* variables, import times) in OUTDIR/python.txt.
set -uo pipefail
out=${1:?usage: device_call.sh OUTDIR [SECTIONS]}; sections=${2:-tests}
has() { [[ ",$sections," == *",$1,"* ]]; }  # a whole comma-separated name ("startab" is not "ab")
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
# the H100 host sets PYTHONDONTWRITEBYTECODE=1: without this every launch would compile the
# editable tree again, which a wheel install never does (docs/performance.md, "The script
# no longer waits for GPU listeners"); COMPILE=0 keeps the host's way
[[ ${COMPILE:-1} != 0 ]] && python3 -m compileall -q radtrack > /dev/null
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -V; nproc
  uptime; date -u; git log --oneline -1 2>/dev/null; } > "$out/host.txt" 2>&1
cat "$out/host.txt"
if has tests; then
  timeout "${TESTS_S:-470}" python3 -m pytest -v -m gpu -p no:cacheprovider --timeout 300 -rs ${TESTS:-tests/} 2>&1 \
    | tee "$out/gpu_tests.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" | tail -60
fi
if has startab; then
  { env | grep -E "^PYTHON"; TIMEFORMAT="python -c pass %R s"; for i in 1 2 3; do time python3 -c pass; done
    TIMEFORMAT="import radtrack.run.launch %R s"
    for i in 1 2 3; do time python3 -c "import radtrack.run.launch"; done
    python3 -X importtime -c "import radtrack.run.launch" 2>&1 | sort -t'|' -k2 -n | tail -25; } \
    > "$out/python.txt" 2>&1
  tree="$PWD/.fixed-before"
  ln -sfn ../listeners "$tree/radtrack/listeners" && ln -sfn ../frontend "$tree/radtrack/frontend"
  python3 benchmarks/fixed_cost.py --repeats "${FIXED_REPEATS:-3}" --tree "$tree" --label before \
    --modes "${START_BEFORE_MODES:-none:detach,smi:detach,smi+dcgm+top:detach}" \
    --json "$out/start-before.json" 2>&1 | tee "$out/start-before.txt" | tail -6
  python3 benchmarks/fixed_cost.py --repeats "${FIXED_REPEATS:-3}" --label after \
    --modes "${START_MODES:-plain,none:detach,smi:detach,smi+dcgm+top:detach}" \
    --json "$out/start-after.json" 2>&1 | tee "$out/start-after.txt" | tail -6
fi
if has fixed; then
  python3 benchmarks/fixed_cost.py --repeats "${FIXED_REPEATS:-3}" \
    --modes "${FIXED_MODES:-plain,none,none:detach,smi,smi:detach,smi+dcgm+top,smi+dcgm+top:detach}" \
    --json "$out/fixed.json" 2>&1 | tee "$out/fixed.txt" | tail -14
fi
if has server; then
  python3 - "$out" <<'PY' 2>&1 | tee "$out/server.txt" | tail -12
import os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, os.getcwd())
from tests.servers import start_mlflow_server
out, work = Path(sys.argv[1]), Path(tempfile.mkdtemp())
server = start_mlflow_server(f"sqlite:///{work / 'server.db'}", work / "artifacts", work)
try:
    modes = os.environ.get("SERVER_MODES", "plain,none:detach,top:detach,smi:detach,smi+dcgm+top:detach")
    subprocess.run([sys.executable, "benchmarks/fixed_cost.py", "--repeats", os.environ.get("FIXED_REPEATS", "3"),
                    "--uri", server.uri, "--modes", modes, "--json", str(out / "server.json")], check=False)
finally:
    server.stop()
PY
fi
if has sprofile; then
  for set in ${PROFILE_SETS:-smi+top smi+top+dcgm@1 smi+dcgm+top}; do
    python3 benchmarks/sampler_profile.py --gpu-load --seconds "${PROFILE_S:-15}" --set "$set" \
      --json "$out/sprofile-${set//[+@]/_}.json" 2>&1 | grep -v '"type": "stats"' | head -22
  done
fi
if has fixed && [[ ${PROFILE:-1} != 0 ]]; then
  work=$(mktemp -d)
  for store in new existing; do
    [ "$store" = new ] && rm -f "$work/mlflow.db"
    (cd "$work" && rm -f m.txt && python3 "$OLDPWD/benchmarks/phase_profile.py" "$out/profile-smi-$store.json" \
      --markers m.txt -- -l smi "$OLDPWD/tests/scripts/marker_sleep.py" "$work/m.txt" > "$out/profile-smi-$store.log" 2>&1)
  done
fi
if has lcpu; then
  PYTHON=python3 SECONDS_PER_SET=${SECONDS_PER_SET:-15} \
    bash benchmarks/listener_cpu_ab.sh "$out/lcpu" "${LCPU_ROUNDS:-2}" "$PWD/.lcpu-before" 2>&1 \
    | tee "$out/lcpu.log" | tail -5
  cat "$out/lcpu/listener_cpu.md"
fi
if has ab; then
  # shellcheck disable=SC2086 # AB_ARGS is a list of arguments
  python3 benchmarks/overhead_ab.py ${AB_ARGS:?set AB_ARGS} --out "$out/overhead_ab.json" 2>&1 \
    | tee -a "$out/overhead_ab.log" | tail -20
fi
