#!/usr/bin/env bash
# Build a wheelhouse for installing radtrack on an offline GPU host
# (CPython 3.12, manylinux x86_64) that already has PyTorch and the common
# scientific stack. Wheels of projects listed in gpu_host_packages.txt beside
# this script (one name per line) are dropped, so the folder holds only what
# the host lacks. benchmarks/device_call.sh and the other device wrappers
# install from it (carried into the checkout as .whl/).
#
#   usage: benchmarks/gpu_wheelhouse.sh OUTDIR [PACKAGE ...]
#   default packages: radtrack's runtime dependencies (mlflow dash plotly ...)
#
# On the GPU host:
#   python3 -m pip install -q --no-index --find-links OUTDIR <pkgs or -e .>
set -euo pipefail
out=${1:?usage: benchmarks/gpu_wheelhouse.sh OUTDIR [PACKAGE ...]}; shift || true
pkgs=("$@"); [ ${#pkgs[@]} -gt 0 ] || pkgs=(mlflow dash plotly nvidia-ml-py psutil pandas tsdownsample pytest-timeout)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d "$out" "${pkgs[@]}"
python3 - "$out" "$here/gpu_host_packages.txt" <<'PY'
import os, re, sys
out, listing = sys.argv[1], sys.argv[2]
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
have = {norm(l.strip()) for l in open(listing) if l.strip() and not l.startswith("#")}
kept = 0
for f in sorted(os.listdir(out)):
    if not f.endswith(".whl"):
        continue
    if norm(f.split("-")[0]) in have:
        os.remove(os.path.join(out, f))
    else:
        kept += os.path.getsize(os.path.join(out, f))
print(f"wheelhouse {out}: {len([f for f in os.listdir(out) if f.endswith('.whl')])} wheels, {kept/2**20:.1f} MiB")
PY
