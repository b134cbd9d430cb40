#!/usr/bin/env bash
# Short versions of the four studies of examples/studies/ on GPU 0, in one call of about
# 8.5 minutes on an H100, into OUTDIR:
#
#   bash benchmarks/studies_gpu.sh OUTDIR
#
# - power-variation: sheet.csv workloads 1-5 (SGEMM solo, 2 and 3 time-shared, 2 and 3 MPS
#   clients), MaxTime $PV_MINUTES (default 0.35 min). Never clocks.csv: it changes GPU
#   settings (those rows run only through the test doubles); spaceshare.csv needs 2 GPUs.
# - time-to-accuracy: sheet.csv as it is (5 repeats of cifar_cnn until val_acc >= 0.92),
#   MaxTime $TTA_MINUTES (default 1 min) as a guard; it runs last and gets what is left.
# - multi-level-utilisation and host-gpu-eda, short version: one set of solo runs both read
#   (experiment "solo-studies", smi+dcgm+top at 0.2 s), MaxTime $SOLO_MINUTES (default 0.33
#   min): resnet, bert (train), distilbert_qa, dlrm in bf16 and cifar_cnn in fp32 from the
#   multi-level sheet, matmul_loop from the host-gpu-eda sheet.
#
# Then, for each study: `radtrack report --study` tables (csv) and its chart (png,
# through radtrack's own image export; skipped with a note when no browser can start),
# `radtrack export` of each experiment (parquet, 1 s), and the store as
# OUTDIR/studies-store.tgz. Environment: PYTHON (default python3). Changes no GPU setting.
set -uo pipefail

out=${1:?usage: studies_gpu.sh OUTDIR}
python=${PYTHON:-python3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out/studies"
out=$(cd "$out" && pwd)
work="$out/studies"
export PYTHONUNBUFFERED=1 MLFLOW_DISABLE_TELEMETRY=true RADTRACK_HOME="$work/.radtrack"
uri="sqlite:///$work/mlflow.db"

"$python" - "$repo/examples/studies" "$work" "${PV_MINUTES:-0.35}" "${TTA_MINUTES:-1}" \
  "${SOLO_MINUTES:-0.33}" <<'PY'
import csv
import sys
from pathlib import Path

studies, work, pv, tta, solo = Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:6]


def rows(name: str) -> list[dict[str, str]]:
    src = studies / name / "sheet.csv"
    lines = [line for line in src.read_text().splitlines() if not line.startswith("#")]
    found = list(csv.DictReader(lines))
    for row in found:
        row["File"] = str((src.parent / row["File"]).resolve())
        row.update(Status="", Run="")
    return found


def write(name: str, chosen: list[dict[str, str]]) -> None:
    with (work / f"{name}.csv").open("w", newline="") as f:
        out = csv.DictWriter(f, list(chosen[0]))
        out.writeheader()
        out.writerows(chosen)
    print(f"studies_gpu: {name}.csv: {len(chosen)} rows")


write("power-variation", [dict(r, MaxTime=pv) for r in rows("power-variation")
                          if int(r["Workload"]) <= 5])
write("time-to-accuracy", [dict(r, MaxTime=tta) for r in rows("time-to-accuracy")])
levels = [r for r in rows("multi-level-utilisation")
          if ("--dtype bf16" in r["Params"] and "cifar_cnn" not in r["File"])
          or ("--dtype fp32" in r["Params"] and "cifar_cnn" in r["File"])]
eda = [r for r in rows("host-gpu-eda") if r["File"].endswith("matmul_loop.py")]
chosen = []
for n, r in enumerate(levels + eda, start=1):
    chosen.append(dict(r, Experiment="solo-studies", Workload=str(n), Listeners="smi+dcgm+top",
                       Interval="0.2", MaxTime=solo))
write("solo-studies", chosen)
PY

{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1; date -u +%F; } \
  > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
cd "$work" || exit 1
# Runs share one time budget ($RUN_SECONDS, default 420 s) so that the reports, exports and
# the store's tarball always fit in the call; a sheet stopped by it (SIGINT, as Ctrl-C)
# keeps every run it finished, and its last runs show as KILLED.
start=$(date +%s)
for sheet in power-variation solo-studies time-to-accuracy; do
  left=$(( start + ${RUN_SECONDS:-420} - $(date +%s) ))
  if (( left < 30 )); then echo "studies_gpu: no time left for $sheet"; continue; fi
  echo "=== $sheet $(date -u +%T) (at most $left s)"
  timeout -s INT -k 30 "$left" "$python" -m radtrack --tracking-uri "$uri" "$sheet.csv" \
    > "$out/$sheet.log" 2>&1
  echo "studies_gpu: $sheet exited $? ($(grep -c 'FINISHED' "$sheet.csv") rows FINISHED)"
  grep -E '^\[radtrack\] .*: (FINISHED|FAILED|KILLED)' "$out/$sheet.log" | tail -12
done

echo "=== reports $(date -u +%T)"
report() {  # experiment study: the tables (csv) and the chart (png) in one call
  timeout 120 "$python" -m radtrack report "$1" --study "$2" --tracking-uri "$uri" \
    --format csv --out "$out/$2.csv" --chart "$out/$2.png" > "$out/$2.txt" 2> "$out/$2.err" \
    || echo "studies_gpu: $2: $(tail -1 "$out/$2.err") (a missing chart is rendered from the store by benchmarks/studies_docs.py)"
  cat "$out/$2.txt"
}
report power-variation power-variation
report time-to-accuracy time-to-accuracy
report solo-studies multi-level-utilisation
report solo-studies host-gpu-eda
for exp in power-variation time-to-accuracy solo-studies; do
  "$python" -m radtrack export "$exp" --every 1s --tracking-uri "$uri" --out "$out/$exp.parquet"
done
tar czf "$out/studies-store.tgz" -C "$out" --exclude=studies/.radtrack studies && rm -rf "$work"
echo "studies_gpu: done $(date -u +%T)"
