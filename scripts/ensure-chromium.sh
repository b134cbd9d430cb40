#!/usr/bin/env bash
# The browser tests drive the system Chromium (never a downloaded one). Install the Debian
# package when it is missing and we may (root with apt-get); otherwise those tests skip.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (Debian package) for the browser tests..."
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/tmp/radtrack-chromium.log 2>&1 \
    || echo "chromium install failed (see /tmp/radtrack-chromium.log): browser tests will skip"
else
  echo "chromium not found and cannot be installed here: browser tests will skip"
fi
exit 0
