#!/usr/bin/env bash
# The SLURM executor tests run a real single-node SLURM (slurmctld + slurmd + munged) on
# 127.0.0.1, started once per pytest session by tests/slurm_cluster.py. Install Debian's
# slurm-wlm and munge when they are missing and we may (root with apt-get); otherwise
# those tests skip, visibly.
set -u
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 \
    && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing slurm-wlm and munge (Debian packages) for the SLURM executor tests..."
  # The packages' own services are not needed: the tests start their own daemons.
  { apt-get -o DPkg::Lock::Timeout=600 update -q &&
    DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get -o DPkg::Lock::Timeout=600 install -y -q \
      --no-install-recommends slurm-wlm munge; } >/tmp/radtrack-slurm.log 2>&1 \
    || echo "slurm install failed (see /tmp/radtrack-slurm.log): SLURM tests will skip"
else
  echo "slurm not found and cannot be installed here: SLURM tests will skip"
fi
exit 0
