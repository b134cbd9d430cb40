#!/usr/bin/env bash
# The two-GPU runs on a host with two or more GPUs, in one call (about 7 minutes on 2 x H200),
# results in at most 8 files of OUTDIR:
#
#   bash benchmarks/two_gpus.sh OUTDIR
#
# 1. the two-GPU `gpu` tests (tests/placement/test_gpu_two.py: rows on GPU 0 and 1 at once, a
#    time-shared pair beside a solo row, an MPS pair on GPU 1 and a 0+1 row, each charged
#    only its own GPUs with per-GPU closure; a DDP run over NCCL across both GPUs)
#    -> gpu_two_tests.log ($TWO_TESTS: other test ids)
# 2. examples/studies/power-variation/spaceshare.csv (one SGEMM copy per GPU at once) beside
#    sheet.csv's solo copy (workload 1), MaxTime $PV_MINUTES (default 0.25; $PV_GPUS=N puts
#    one copy on each of GPUs 0..N-1 instead of the sheet's two), then
#    `radtrack report power-variation --study power-variation` -> spaceshare.log,
#    power-variation.txt / .csv, and the store as spaceshare-store.tgz
# Installs like benchmarks/device_call.sh (carry .whl). NVLink multicast stays off (the host's
# NCCL_NVLS_ENABLE=0 and companions, set again here); no GPU setting is changed; radtrack
# quits the MPS daemons it starts.
set -uo pipefail
out=${1:?usage: two_gpus.sh OUTDIR}; mkdir -p "$out"; out=$(cd "$out" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$repo" || exit 2
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  nvidia-smi topo -m; python3 -V; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'
  nproc; date -u; git log --oneline -1 2>/dev/null; } > "$out/host.txt" 2>&1
cat "$out/host.txt"

timeout "${TESTS_S:-330}" python3 -m pytest -v -m gpu -p no:cacheprovider --timeout 300 -rs \
  ${TWO_TESTS:-tests/placement/test_gpu_two.py} > "$out/gpu_two_tests.log" 2>&1
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$out/gpu_two_tests.log" | tail -8

work=$(mktemp -d); export RADTRACK_HOME="$work/.radtrack"; uri="sqlite:///$work/mlflow.db"
python3 - "$repo/examples/studies/power-variation" "$work/pv.csv" "${PV_MINUTES:-0.25}" "${PV_GPUS:-}" <<'PY'
import csv
import sys
from pathlib import Path

src, dst, minutes, gpus = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = []
for name, keep in (("sheet.csv", {"1"}), ("spaceshare.csv", None)):
    lines = [x for x in (src / name).read_text().splitlines() if not x.startswith("#")]
    found = [r for r in csv.DictReader(lines) if keep is None or r["Workload"] in keep]
    if name == "spaceshare.csv" and gpus:  # one copy on each of GPUs 0..PV_GPUS-1
        found = [{**found[0], "Devices": str(i)} for i in range(int(gpus))]
    for row in found:
        row.update(File=str((src / row["File"]).resolve()), MaxTime=minutes, Status="", Run="")
        rows.append(row)
with dst.open("w", newline="") as f:
    w = csv.DictWriter(f, list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print(f"gpu_two: {dst.name}: {len(rows)} rows")
PY
(cd "$work" && timeout -s INT -k 30 "${PV_S:-240}" python3 -m radtrack --tracking-uri "$uri" "$work/pv.csv") > "$out/spaceshare.log" 2>&1
echo "gpu_two: spaceshare exited $?"; grep -E '^\[radtrack\] .*: (FINISHED|FAILED|KILLED)' "$out/spaceshare.log"
timeout 120 python3 -m radtrack report power-variation --study power-variation --tracking-uri "$uri" \
  --format csv --out "$out/power-variation.csv" > "$out/power-variation.txt" 2>&1
cat "$out/power-variation.txt"
tar czf "$out/spaceshare-store.tgz" -C "$work" --exclude=.radtrack --exclude=pv.csv .
