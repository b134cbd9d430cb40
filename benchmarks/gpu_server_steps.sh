#!/usr/bin/env bash
# docs/gpu-server.md's steps 2 and 3 on a GPU host, as a new user would run them, with the
# example sheets' MaxTime cut to $MINUTES (default 0.25) so the whole walk takes ~3 minutes:
#
#   bash benchmarks/gpu_server_steps.sh OUTDIR
#
# check the install (--version, listeners, --dry-run), run examples/solo.csv then
# examples/timeshare.csv into ./mlflow.db, report timeshare, then move the runs to a team
# server (a local `mlflow server` from tests/servers.py stands for tracker.example.org):
# radtrack copy --dry-run, radtrack copy, radtrack report against the server. Logs in OUTDIR.
# Installs from the carried wheelhouse like benchmarks/device_call.sh. Changes no GPU setting.
set -uo pipefail
out=${1:?usage: gpu_server_steps.sh OUTDIR}; mkdir -p "$out"; out=$(cd "$out" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
cd "$repo" || exit 2
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
work=$(mktemp -d); mkdir -p "$work/examples"
for s in solo timeshare; do  # the example sheets, MaxTime cut, Files made absolute
  python3 - "$repo/examples/$s.csv" "$work/examples/$s.csv" "${MINUTES:-0.25}" <<'PY'
import csv, sys
from pathlib import Path
src, dst, minutes = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
rows = list(csv.DictReader(x for x in src.read_text().splitlines() if not x.startswith("#")))
with dst.open("w", newline="") as f:
    w = csv.DictWriter(f, list(rows[0]))
    w.writeheader()
    for r in rows:
        w.writerow({**r, "File": str((src.parent / r["File"]).resolve()), "MaxTime": minutes})
PY
done
cd "$work" || exit 2
step() { echo "\$ $*"; "$@"; echo "[exit $?]"; }
{
  step radtrack --version
  step radtrack listeners
  step radtrack --dry-run examples/solo.csv
  step radtrack examples/solo.csv
  step radtrack examples/timeshare.csv
  step radtrack report timeshare
} > "$out/steps-2.log" 2>&1
python3 - "$work" "$repo" > "$out/steps-3.log" 2>&1 <<'PY'
import subprocess, sys
from pathlib import Path
work, repo = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(repo / "tests"))
from servers import start_mlflow_server
server = start_mlflow_server(f"sqlite:///{work / 'team.db'}", work / "team-artifacts", work / "srv")
try:
    for argv in (["copy", "--from", "sqlite:///mlflow.db", "--to", server.uri, "solo", "timeshare", "--dry-run"],
                 ["copy", "--from", "sqlite:///mlflow.db", "--to", server.uri, "solo", "timeshare"],
                 ["report", "timeshare", "--tracking-uri", server.uri]):
        print("$ radtrack " + " ".join(argv), flush=True)
        p = subprocess.run(["radtrack", *argv], cwd=work, text=True, capture_output=True)
        print(p.stdout + p.stderr + f"[exit {p.returncode}]", flush=True)
finally:
    server.stop()
PY
grep -E "^\\$|\\[exit|FINISHED|FAILED|KILLED|copied|runs? " "$out/steps-2.log" "$out/steps-3.log" | head -60
