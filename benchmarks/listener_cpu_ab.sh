#!/usr/bin/env bash
# Listener CPU before/after issue 25's listener work, interleaved, on this host (issue 25).
#   bash benchmarks/listener_cpu_ab.sh OUT_DIR [ROUNDS=2] [BEFORE=a1e7561]
# Runs benchmarks/listener_cpu.py against the tree at BEFORE (a commit, extracted with git
# archive, or a folder holding that tree; copied to OUT_DIR/before-tree and imported
# through PYTHONPATH ahead of the editable install) and
# against this checkout, ROUNDS times each, alternating; real NVML where a GPU answers
# (with a bf16 matmul load), else the NVML doubles. Writes OUT_DIR/listener_cpu.{md,json}.
set -euo pipefail
out=$(realpath -m "${1:?usage: listener_cpu_ab.sh OUT_DIR [ROUNDS] [BEFORE]}")
rounds=${2:-2}
before=${3:-a1e7561}
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
[[ $py == */* ]] && py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # still right after the cd below
mkdir -p "$out"
tree="$out/before-tree"
rm -rf "$tree" && mkdir -p "$tree"
if [[ -d $before ]]; then  # a copy of the old tree (a host whose checkout has no .git)
  cp -r "$before"/. "$tree"
elif ! git -C "$repo" archive "$before" | tar -x -C "$tree"; then
  echo "no git history here: give BEFORE as a folder holding the old tree (git archive a1e7561 elsewhere)" >&2
  exit 2
fi
# a tree older than the move of listeners/ and frontend/ under radtrack/: make it a package
[ -d "$tree/listeners" ] && ln -sfn "$tree/listeners" "$tree/radtrack/listeners"
[ -d "$tree/frontend" ] && ln -sfn "$tree/frontend" "$tree/radtrack/frontend"
sets=${SETS:-smi,top,smi+top,smi+dcgm+top,smi+top+dcgm@1}
secs=${SECONDS_PER_SET:-20}
for i in $(seq "$rounds"); do
  (cd "$tree" && PYTHONPATH="$tree" "$py" "$repo/benchmarks/listener_cpu.py" --out "$out" \
      --seconds "$secs" --sets "$sets" --gpu-load --label "before $before #$i")
  (cd "$repo" && "$py" benchmarks/listener_cpu.py --out "$out" --seconds "$secs" --sets "$sets" \
      --gpu-load --label "after $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo checkout) #$i")
done
rm -rf "$tree"
echo "tables: $out/listener_cpu.md"
