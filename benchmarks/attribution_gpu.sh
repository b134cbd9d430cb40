#!/usr/bin/env bash
# Issue 51's GPU measurements in one go (one device call): runs
# benchmarks/attribution_h200.csv (solo baselines twice, identical twins time-sliced / MPS /
# equal and 70-30 caps, three mixed pairs time-sliced and under MPS) into a SQLite store
# while benchmarks/counter_reader.py reads GPU 0's energy counter at 20 Hz as an
# independent reference, then packs the store for benchmarks/attribution_analysis.py.
#
#   bash benchmarks/attribution_gpu.sh OUTDIR [RADTRACK_TIMEOUT_S]
#
# SHEET=path runs another sheet whose File cells start ../workloads/ (the second round's
# mixed pairs: benchmarks/attribution_mixed_h200.csv).
# Leaves OUTDIR/store.tar.xz (mlflow.db + artifacts; split in 15 MiB parts store.tar.xz.part*
# when larger), counter.csv, radtrack.log, nvidia-smi.txt. An MPS daemon radtrack started
# is quit by radtrack itself; a leftover one under this script's pipe directories is quit here.
set -uo pipefail
out=${1:?usage: attribution_gpu.sh OUTDIR [RADTRACK_TIMEOUT_S]}
limit=${2:-480}
python=${PYTHON:-python3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d /tmp/attribution.XXXXXX)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true RADTRACK_HOME="$work/.radtrack"
nvidia-smi -q > "$out/nvidia-smi.txt" 2>&1 || true
cp "${SHEET:-$repo/benchmarks/attribution_h200.csv}" "$work/sheet.csv"
sed -i "s#\.\./workloads/#$repo/workloads/#" "$work/sheet.csv"
"$python" "$repo/benchmarks/counter_reader.py" "$out/counter.csv" --period 0.05 --seconds $((limit + 60)) &
reader=$!
cd "$work"
start=$(date +%s)
timeout "$limit" "$python" -m radtrack --tracking-uri "sqlite:///$work/mlflow.db" sheet.csv \
  > "$out/radtrack.log" 2>&1
echo "attribution_gpu: radtrack exited $? after $(( $(date +%s) - start )) s" | tee -a "$out/radtrack.log"
kill -TERM "$reader"; wait "$reader"
for pipe in $(find "$work" -type d -name pipe 2>/dev/null); do
  CUDA_MPS_PIPE_DIRECTORY=$pipe timeout 30 nvidia-cuda-mps-control <<< quit 2>/dev/null || true
done
cp sheet.csv "$out/sheet.csv"
tar -cJf "$out/store.tar.xz" --exclude=.radtrack -C "$work" . 2>>"$out/radtrack.log"
if [[ $(stat -c %s "$out/store.tar.xz") -gt 15728640 ]]; then
  split -b 15M "$out/store.tar.xz" "$out/store.tar.xz.part" && rm "$out/store.tar.xz"
fi
ls -la "$out"
