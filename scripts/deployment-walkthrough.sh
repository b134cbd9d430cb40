#!/usr/bin/env bash
# docs/deployment.md, section by section, on this host: a Debian host without systemd, as
# root, with Debian's postgresql package (scripts/ensure-postgres.sh installs it).
#
#   scripts/deployment-walkthrough.sh [--work DIR] [--trace FILE] [--python PY] [CHECKOUT]
#
# Every command of the doc runs as written there, through `doc TEMPLATE`: the template is
# the doc's text, and only the placeholders set with `subs` are replaced (the doc's
# PASSWORD, tracker.example.org:5000, the PostgreSQL version 15, /srv/mlflow/artifacts,
# ...: free ports and temp folders here). Each command, its template, the substitutions,
# its exit status and its output's log go to the trace file (records separated by \036,
# fields by \037), which tests/test_deployment_doc.py reads: it checks every command of
# the doc's fenced blocks is among the templates run here, or on its allow-list.
#
# The sections: 1 a wheel built from (a copy of) the checkout, installed with the `team`
# extra into fresh venvs (offline: the dependencies are those of the test venv, linked in;
# on a fresh host pip fetches them from the index); 2 the Debian cluster started with
# pg_ctlcluster (created with pg_createcluster on a free port if there is none), role and
# databases made with runuser; 3 mlflow server with the doc's flags, /health and
# --allowed-hosts checked; 4 a launch and a sheet into it; 5 the basic-auth server, users,
# a launch refused up front and admitted after the EDIT grant; 6 radtrack ui as the viewer,
# radtrack report; 7 an experiment with a shared artifact path created in PostgreSQL
# directly. At the end (also on failure or a signal) everything it started is stopped, its
# role and databases are dropped, and the cluster is left as it was found (stopped again
# if it was down, dropped if this script created it). Exit 3: the cluster already has a
# role or database of the doc's names that this script did not make (not touched).
set -euo pipefail
# a fresh install is walked through: nothing from the caller's PYTHONPATH may shadow the venvs
unset PYTHONPATH

CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="" TRACE="" PY=""
while [ $# -gt 0 ]; do
  case $1 in
    --work) WORK=$2; shift 2;;
    --trace) TRACE=$2; shift 2;;
    --python) PY=$2; shift 2;;
    -h|--help) sed -n '2,26p' "$0"; exit 0;;
    *) CHECKOUT=$(cd "$1" && pwd); shift;;
  esac
done
PY=${PY:-$CHECKOUT/.venv/bin/python}
OWN_WORK=0
if [ -z "$WORK" ]; then WORK=$(mktemp -d /tmp/radtrack-walkthrough.XXXXXX); OWN_WORK=1; fi
mkdir -p "$WORK/steps"
TRACE=${TRACE:-$WORK/trace}
: >"$TRACE"
MARK="radtrack deployment walkthrough"  # comment on the role it creates: a leftover is ours

say() { printf '[walkthrough] %s\n' "$*"; }
die() { say "FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (runuser, pg_ctlcluster)"
[ -x "$PY" ] || die "no Python at $PY (--python)"
for tool in pg_ctlcluster pg_lsclusters runuser setsid curl flock; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# -- running the doc's commands ---------------------------------------------------------
SUBS=()      # placeholder, value, placeholder, value...: applied to each template in order
subs() { SUBS=("$@"); }
apply() {
  local s=$1 i
  for ((i = 0; i < ${#SUBS[@]}; i += 2)); do s=${s//"${SUBS[i]}"/"${SUBS[i + 1]}"}; done
  printf '%s' "$s"
}
STEP=0 LOG="" STDIN=""
took() { local us=$((${EPOCHREALTIME/./} - ${1/./})); printf '%d.%d' $((us / 1000000)) $((us % 1000000 / 100000)); }
record() { { printf '%s\037' "$@" "${SUBS[@]}"; printf '\036'; } >>"$TRACE"; }

# run KIND [--fails|--may-fail] TEMPLATE: KIND doc (a command of docs/deployment.md) or
# check (this script's own look at a result). It runs in this shell (exports stay); with
# STDIN set, in a new session (no terminal: prompts read their answers from stdin).
run() {
  local kind=$1 mode=ok rc=0 cmd t0=$EPOCHREALTIME; shift
  case $1 in --fails|--may-fail) mode=$1; shift;; esac
  cmd=$(apply "$1")
  STEP=$((STEP + 1)); LOG=$WORK/steps/$(printf %02d "$STEP").log
  say "\$ $1"
  if [ -n "$STDIN" ]; then
    setsid -w bash -c "$cmd" >"$LOG" 2>&1 <<<"$STDIN" 9>&- || rc=$?
  else
    eval "$cmd" >"$LOG" 2>&1 </dev/null 9>&- || rc=$?
  fi
  sed 's/^/    /' "$LOG" | tail -n 25
  say "  (exit $rc, $(took "$t0") s)"
  record "$kind" "$rc" "$(took "$t0")" "$LOG" "$1" "$cmd"
  case $mode in
    ok) [ "$rc" = 0 ] || die "step $STEP exited $rc: $1";;
    --fails) [ "$rc" != 0 ] || die "step $STEP should have been refused: $1";;
  esac
  return 0
}
doc() { run doc "$@"; }
check() { run check "$@"; }
expect() { grep -q -- "$1" "$LOG" || die "step $STEP: no '$1' in its output ($LOG)"; }

# doc_bg NAME TEMPLATE: a long-running command of the doc, in a session of its own
BG=()
doc_bg() {
  local name=$1 cmd; cmd=$(apply "$2")
  STEP=$((STEP + 1)); LOG=$WORK/steps/$(printf %02d "$STEP")-$name.log
  say "\$ $2 &"
  setsid bash -c "$cmd" >"$LOG" 2>&1 </dev/null 9>&- &
  BG+=("$!"); printf -v "PID_$name" '%s' "$!"
  record doc_bg "" "" "$LOG" "$2" "$cmd"
}
# doc_file PATH TEMPLATE: a file the doc shows, written with the placeholders replaced
doc_file() {
  mkdir -p "$(dirname "$1")"; apply "$2" >"$1"; printf '\n' >>"$1"
  STEP=$((STEP + 1)); say "file $1"; record doc_file 0 "" "$1" "$2" "$(cat "$1")"
}
stop_bg() {  # stop a session started by doc_bg: SIGTERM, 20 s, SIGKILL
  local pid=$1 i
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
wait_http() {  # wait_http URL PID LOG: until URL answers 200, while PID lives
  local i
  for ((i = 0; i < 600; i++)); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { tail -n 30 "$3" >&2; die "exited before $1 answered"; }
    sleep 0.3
  done
  tail -n 30 "$3" >&2; die "$1 did not answer in 180 s"
}
as_postgres() { (cd / && runuser -u postgres -- "$@"); }
sql() { as_postgres psql -XtAq -d postgres -c "$1"; }

# -- leaving the host as found ----------------------------------------------------------
# one walkthrough at a time on a host: they share the cluster and the doc's role name
# (fd 9 holds the lock; the commands run without it, so nothing they leave holds it)
exec 9>/tmp/radtrack-deployment-walkthrough.lock
flock -w 600 9 || die "another walkthrough has held /tmp/radtrack-deployment-walkthrough.lock for 10 min"
PGVER=$(ls /usr/lib/postgresql | sort -n | tail -n 1)
[ -n "$PGVER" ] || die "no /usr/lib/postgresql/<version> (Debian package postgresql)"
cluster() { pg_lsclusters -h | awk -v v="$PGVER" '$1 == v && $2 == "main" {print $3, $4}'; }
CLUSTER_BEFORE=$(cluster)
MADE_CLUSTER=0 MADE_ROLE=0 DATABASES=(mlflow mlflow_auth mlflow_direct)
cleanup() {
  local rc=$? pid db
  trap - EXIT INT TERM
  for pid in "${BG[@]}"; do stop_bg "$pid"; done
  if [ "$MADE_CLUSTER" = 1 ]; then
    pg_dropcluster --stop "$PGVER" main || true
  else
    if [ "$MADE_ROLE" = 1 ] && [ "$(cluster | cut -d' ' -f2)" = online ]; then
      for db in "${DATABASES[@]}"; do as_postgres dropdb --if-exists --force "$db" || true; done
      as_postgres dropuser --if-exists mlflow || true
    fi
    case $CLUSTER_BEFORE in *down*) pg_ctlcluster "$PGVER" main stop || true;; esac
  fi
  say "cluster $PGVER/main before: ${CLUSTER_BEFORE:-none}; after: $(cluster)"
  record cluster "$rc" "" "" "${CLUSTER_BEFORE:-none}" "$(cluster)"
  if [ "$OWN_WORK" = 1 ] && [ "$rc" = 0 ]; then rm -rf "$WORK"; fi
  [ "$rc" = 0 ] || say "exit $rc; each step's output is in $WORK/steps"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unset MLFLOW_TRACKING_URI MLFLOW_TRACKING_USERNAME MLFLOW_TRACKING_PASSWORD \
  MLFLOW_TRACKING_TOKEN MLFLOW_AUTH_CONFIG_PATH RADTRACK_HOME PGPORT PGCLUSTER
export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true
# section 3's advice: no GenAI job runners in a server that only tracks runs
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false
PORT=$(free_port) UI_PORT=$(free_port)
PGPASS=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ADMIN_PW=admin-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# == 1. Install ==========================================================================
# A copy of the checkout's working tree (tracked and untracked files git does not ignore),
# so the build's build/ and egg-info land in the copy. The venvs see the test venv's
# packages (linked, radtrack's own left out) and pip works offline: no index, no build
# isolation (setuptools is among those packages).
say "section 1: install (from $CHECKOUT, Python $PY)"
mkdir -p "$WORK/src"
if git -C "$CHECKOUT" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$CHECKOUT" ls-files -co --exclude-standard -z \
    | tar -C "$CHECKOUT" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$WORK/src" -xf -
else
  tar -C "$CHECKOUT" --exclude='./.venv*' --exclude=./build --exclude=./dist -cf - . | tar -C "$WORK/src" -xf -
fi
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
mkdir -p "$WORK/test-venv-packages"
for entry in "$SITE"/*; do
  case ${entry##*/} in radtrack-*|__editable__*radtrack*|__pycache__) continue;; esac
  ln -s "$entry" "$WORK/test-venv-packages/"
done
new_venv() {
  "$PY" -m venv --without-pip "$1"
  printf 'import site; site.addsitedir(%s)\n' "'$WORK/test-venv-packages'" \
    >"$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/test-venv-packages.pth"
}
pip() { python -m pip "$@"; }  # the venv's python runs pip (linked in from the test venv)
export PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 PIP_DISABLE_PIP_VERSION_CHECK=1
SERVER_PATH=$(dirname "$PY")  # mlflow server and its extras: the test venv's
cd "$WORK"
new_venv "$WORK/venv-checkout"
export PATH="$WORK/venv-checkout/bin:$SERVER_PATH:$PATH"
subs /path/to/radtrack "$WORK/src"
doc "pip install '/path/to/radtrack[team]'      # from the checkout: server host, nodes, laptops"
check 'radtrack --help'
expect 'usage: radtrack'
doc 'pip wheel --no-deps -w dist /path/to/radtrack'
WHEEL=$(cd dist && ls radtrack-*-py3-none-any.whl)
VERSION=${WHEEL#radtrack-}; VERSION=${VERSION%%-*}
new_venv "$WORK/venv-wheel"
export PATH="$WORK/venv-wheel/bin:$SERVER_PATH:${PATH#"$WORK/venv-checkout/bin:$SERVER_PATH:"}"
subs '<version>' "$VERSION"
doc "pip install 'dist/radtrack-<version>-py3-none-any.whl[team]'"
check "python -c 'import radtrack, psycopg, flask_wtf; print(radtrack.__file__)'"
expect "$WORK/venv-wheel/"
check 'radtrack --help'
expect 'usage: radtrack'

# == 2. PostgreSQL =======================================================================
say "section 2: PostgreSQL $PGVER, cluster main: ${CLUSTER_BEFORE:-none}"
if [ -z "$CLUSTER_BEFORE" ]; then
  MADE_CLUSTER=1
  subs
  check "pg_createcluster -p $(free_port) $PGVER main"
fi
PGPORT=$(cluster | cut -d' ' -f1); export PGPORT  # runuser keeps it: the cluster's port
subs 15 "$PGVER"
case $CLUSTER_BEFORE in
  *online*) doc --may-fail 'pg_ctlcluster 15 main start                # no systemd; with systemd: systemctl start postgresql'
            expect 'already running';;
  *) doc 'pg_ctlcluster 15 main start                # no systemd; with systemd: systemctl start postgresql';;
esac
subs
doc 'runuser -u postgres -- pg_isready          # "accepting connections"'
expect 'accepting connections'
owner=$(sql "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'mlflow'")
if [ "$owner" = "$MARK" ]; then  # left by an interrupted walkthrough: ours to drop
  for db in "${DATABASES[@]}"; do as_postgres dropdb --if-exists --force "$db"; done
  as_postgres dropuser mlflow
fi
taken=$(sql "SELECT string_agg(name, ', ') FROM (SELECT rolname AS name FROM pg_roles WHERE rolname = 'mlflow' UNION ALL SELECT datname FROM pg_database WHERE datname IN ('mlflow', 'mlflow_auth', 'mlflow_direct')) t")
if [ -n "$taken" ]; then
  say "cluster $PGVER/main already has $taken, not made by this script: left alone" \
    "(drop them with dropdb/dropuser if an interrupted walkthrough left them)" >&2
  exit 3
fi
MADE_ROLE=1
STDIN=$(printf '%s\n%s' "$PGPASS" "$PGPASS")  # --pwprompt's two answers, no terminal
doc 'runuser -u postgres -- createuser --pwprompt mlflow'
STDIN=""
sql "COMMENT ON ROLE mlflow IS '$MARK'"
doc 'runuser -u postgres -- createdb --owner mlflow mlflow'
doc 'runuser -u postgres -- createdb --owner mlflow mlflow_auth   # only for basic auth (section 5)'
DB_URI="postgresql+psycopg://mlflow:$PGPASS@127.0.0.1:$PGPORT/mlflow"
check "PGPASSWORD='$PGPASS' psql -XtAq -h 127.0.0.1 -U mlflow -d mlflow -c \"SELECT 'password accepted'\""
expect 'password accepted'

# == 3. The tracking server ==============================================================
say "section 3: mlflow server on 127.0.0.1:$PORT"
SERVER_SUBS=(PASSWORD "$PGPASS" :5432 ":$PGPORT" /srv/mlflow/artifacts "$WORK/srv/artifacts"
             '--host 0.0.0.0' '--host 127.0.0.1' '--port 5000' "--port $PORT" ':5000' ":$PORT" '--workers 8' '--workers 1')
CLIENT_SUBS=(tracker.example.org:5000 "127.0.0.1:$PORT" tracker:5000 "127.0.0.1:$PORT")
subs "${SERVER_SUBS[@]}"
doc_bg server 'mlflow server \
  --backend-store-uri postgresql+psycopg://mlflow:PASSWORD@127.0.0.1:5432/mlflow \
  --artifacts-destination /srv/mlflow/artifacts \
  --host 0.0.0.0 --port 5000 --workers 8 \
  --allowed-hosts '"'"'tracker.example.org:5000,tracker:5000,localhost:*,127.0.0.1:*'"'"
wait_http "http://127.0.0.1:$PORT/health" "$PID_server" "$LOG"
subs "${CLIENT_SUBS[@]}"
doc 'curl http://tracker:5000/health'
expect '^OK'
subs
# --allowed-hosts (/health is exempt from it): a listed name is served, another refused
API="http://127.0.0.1:$PORT/api/2.0/mlflow/experiments/search?max_results=1"
check "curl -sS -o /dev/null -w '%{http_code}\n' -H 'Host: tracker:$PORT' '$API'"
expect '^200'
check "curl -sS -o /dev/null -w '%{http_code}\n' -H 'Host: elsewhere.example.com:$PORT' '$API'"
expect '^403'

# == 4. Pointing radtrack at it ==========================================================
say "section 4: a launch and a sheet"
mkdir -p "$WORK/node"; cd "$WORK/node"
export RADTRACK_HOME=$WORK/node/.radtrack
printf 'import time\n\nfor step in range(5):\n    time.sleep(0.1)\nprint("trained")\n' >train.py
printf '%s\n' 'Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval' \
  'resnet,2,,,,-,train.py,top,,0.1' >sheet.csv
subs "${CLIENT_SUBS[@]}"
doc 'export MLFLOW_TRACKING_URI=http://tracker.example.org:5000'
doc 'radtrack -e resnet -l smi+dcgm+top --interval 0.1 train.py'
expect 'resnet-1 A: FINISHED'
doc 'radtrack sheet.csv'
expect 'resnet-2 A: FINISHED'
check 'cat sheet.csv'
expect '^resnet,2,FINISHED'
subs
stop_bg "$PID_server"

# == 5. Users and passwords (basic auth) =================================================
say "section 5: the basic-auth server on the same port"
subs PASSWORD "$PGPASS" :5432 ":$PGPORT"
doc_file "$WORK/etc/basic_auth.ini" '[mlflow]
default_permission = READ
database_uri = postgresql+psycopg://mlflow:PASSWORD@127.0.0.1:5432/mlflow_auth
admin_username = admin
authorization_function = mlflow.server.auth:authenticate_request_basic_auth'
subs /etc/mlflow/basic_auth.ini "$WORK/etc/basic_auth.ini"
doc 'export MLFLOW_AUTH_CONFIG_PATH=/etc/mlflow/basic_auth.ini'
subs "'...'" "'$ADMIN_PW'"
doc "export MLFLOW_AUTH_ADMIN_PASSWORD='...'"
subs "'...'" "'$SECRET'"
doc "export MLFLOW_FLASK_SERVER_SECRET_KEY='...'       # required by the auth app (CSRF)"
subs "${SERVER_SUBS[@]}" 'postgresql+psycopg://...' "$DB_URI"
doc_bg auth 'mlflow server --app-name basic-auth --backend-store-uri postgresql+psycopg://... \
  --artifacts-destination /srv/mlflow/artifacts --host 0.0.0.0 --port 5000 --workers 8'
wait_http "http://127.0.0.1:$PORT/health" "$PID_auth" "$LOG"
unset MLFLOW_AUTH_ADMIN_PASSWORD MLFLOW_FLASK_SERVER_SECRET_KEY  # the server's, not the clients'
ADMIN_ENV="export MLFLOW_TRACKING_USERNAME=admin MLFLOW_TRACKING_PASSWORD='the admin password'"
subs 'the admin password' "$ADMIN_PW"
doc "$ADMIN_ENV"
subs "${CLIENT_SUBS[@]}"
doc "python -c \"from mlflow.server import get_app_client
auth = get_app_client('basic-auth', tracking_uri='http://tracker:5000')
auth.create_user('alice', 'alice-password-12+')
auth.create_user('viewer', 'viewer-password-12+')\""
subs
check "curl -sS -o /dev/null -w '%{http_code}\n' -u viewer:viewer-password-12+ http://127.0.0.1:$PORT/api/2.0/mlflow/experiments/get-by-name?experiment_name=resnet"
expect '^200'
ALICE_ENV=('export MLFLOW_TRACKING_USERNAME=alice' "export MLFLOW_TRACKING_PASSWORD='...'")
subs "'...'" "'alice-password-12+'"
doc "${ALICE_ENV[0]}"
doc "${ALICE_ENV[1]}"
subs
doc --fails 'radtrack -e resnet -l smi+dcgm+top --interval 0.1 train.py'
expect "user 'alice' may not write to experiment 'resnet'"
expect 'grant_user_permission'
EXPERIMENT_ID=$(sed -n 's/.*(id \([0-9]*\), permission.*/\1/p' "$LOG")  # the refusal names it
[ -n "$EXPERIMENT_ID" ] || die "the refusal does not name the experiment's id"
subs 'the admin password' "$ADMIN_PW"
doc "$ADMIN_ENV"
subs "${CLIENT_SUBS[@]}" EXPERIMENT_ID "$EXPERIMENT_ID"
doc "python -c \"from mlflow.server import get_app_client
get_app_client('basic-auth', tracking_uri='http://tracker:5000').grant_user_permission(
    'alice', 'experiment', 'EXPERIMENT_ID', 'EDIT')\""
subs "'...'" "'alice-password-12+'"
doc "${ALICE_ENV[0]}"
doc "${ALICE_ENV[1]}"
subs
doc 'radtrack -e resnet -l smi+dcgm+top --interval 0.1 train.py'
expect 'resnet-3 A: FINISHED'

# == 6. radtrack ui and radtrack report against the server ===============================
say "section 6: radtrack ui as the viewer, radtrack report"
subs "${CLIENT_SUBS[@]}" '=...' '=viewer-password-12+' 'radtrack ui' "radtrack ui --port $UI_PORT"
doc_bg ui 'MLFLOW_TRACKING_USERNAME=viewer MLFLOW_TRACKING_PASSWORD=... \
  radtrack ui --tracking-uri http://tracker.example.org:5000     # http://127.0.0.1:8050'
wait_http "http://127.0.0.1:$UI_PORT/" "$PID_ui" "$LOG"
subs
check "curl -fsS http://127.0.0.1:$UI_PORT/_dash-layout"
expect '"resnet"'
stop_bg "$PID_ui"
subs "${CLIENT_SUBS[@]}"
doc 'radtrack report resnet --tracking-uri http://tracker.example.org:5000'
expect 'alice'
expect 'resnet-2'

# == 7. Second recipe: nodes write PostgreSQL directly ==================================
say "section 7: an experiment with a shared artifact path, in PostgreSQL directly"
subs
check 'runuser -u postgres -- createdb --owner mlflow mlflow_direct'
subs 'postgresql+psycopg://...' "${DB_URI%/mlflow}/mlflow_direct" /shared/mlartifacts "$WORK/shared/mlartifacts"
doc "MLFLOW_TRACKING_URI=postgresql+psycopg://... python -c \\
  'import mlflow; mlflow.MlflowClient().create_experiment(\"resnet\", artifact_location=\"file:///shared/mlartifacts/resnet\")'"
subs
check "as_postgres psql -XtAq -d mlflow_direct -c \"SELECT artifact_location FROM experiments WHERE name = 'resnet'\""
expect "file://$WORK/shared/mlartifacts/resnet"
say "all sections done"
