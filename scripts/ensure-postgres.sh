#!/usr/bin/env bash
# The team-deployment tests (tests/servers.py) start a throw-away PostgreSQL server from the
# Debian package's binaries (initdb + postgres, a data directory in a temp folder, 127.0.0.1
# only). Install the package when it is missing and we may (root with apt-get); otherwise
# those tests skip, visibly. Installing it starts no cluster we use: the tests make their own.
set -u
for bin in /usr/lib/postgresql/*/bin/initdb; do
  [ -x "$bin" ] && exit 0
done
command -v initdb >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing postgresql (Debian package) for the team-server tests..."
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; } >/tmp/radtrack-postgres.log 2>&1 \
    || echo "postgresql install failed (see /tmp/radtrack-postgres.log): team-server tests will skip"
else
  echo "postgresql not found and cannot be installed here: team-server tests will skip"
fi
exit 0
