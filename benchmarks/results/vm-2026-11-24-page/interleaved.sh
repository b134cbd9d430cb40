#!/bin/bash
# interleaved old/new page benchmark rounds
cd /work/main
for r in 1 2 3; do
  for v in new old; do
    fe=frontend; [ $v = old ] && fe=/tmp/oldfe/frontend
    echo "== round $r $v $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 900 .venv/bin/python benchmarks/frontend.py --repeat 1 --frontend-from $fe --json /tmp/pb/$v-$r.json 2>&1 | tail -3
  done
done
echo "== done $(date -u +%H:%M:%S)"
