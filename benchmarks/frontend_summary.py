"""The page's Summary callback without a browser: its ten ticks on two versions, paired.

``benchmarks/frontend.py`` times a tick in Chromium, where the page's other callbacks (the
metric list, the basket) share the two cores with it. This one times the Summary's own
work: in a fresh process with an empty trace cache, ``summary_answer`` for the first
k runs of the benchmark's store (k = 1..10, as ticking them one by one asks), on this
tree and on another checkout's (``--old DIR``: a folder holding a ``radtrack`` package,
e.g. ``git archive <commit> radtrack | tar -x -C DIR``), alternating old/new and flipping
the order every pair, so both see the same load. Per pair it prints each version's ticks
(ms), their sum and the ratio new / old; then the medians.

    .venv/bin/python benchmarks/frontend_summary.py --old /tmp/old [--pairs 4] [--store DIR]

The store (10 runs x 20 metrics x 36,000 points, ``frontend.py``'s) is seeded into
``--store`` once and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# One process's ticks: argv[1] the store folder; prints one JSON line.
TICKS = """
import json, os, sys, time
from pathlib import Path
root = Path(sys.argv[1])
os.environ["RADTRACK_CACHE_DIR"] = str(root / "cache" / f"{os.getpid()}-{time.time_ns()}")
import radtrack
from radtrack.frontend.callbacks_chart import summary_answer
from radtrack.frontend.data import DataSource
from radtrack.frontend.summaries import SummaryCache
source = DataSource((root / "uri").read_text())
rows = source.experiment_rows("bench")
ids = [r["run_id"] for r in rows if str(r.get("tag.radtrack.role", "")) != "workload"]
cache = SummaryCache(source)
ticks = []
for k in range(1, len(ids) + 1):
    t0 = time.perf_counter()
    answer = summary_answer(source, cache, ids[:k])
    ticks.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"tree": radtrack.__file__, "ticks_ms": ticks, "load": os.getloadavg()[0],
                  "shape": [len(answer["rows"]), len(answer["columns"])]}))
"""


def store(root: Path) -> Path:
    if not (root / "uri").is_file():
        import frontend as bench

        root.mkdir(parents=True, exist_ok=True)
        uri, _ = bench.seed(root, 10, 20, 36_000, history=False)
        (root / "uri").write_text(uri)
    return root


def ticks(root: Path, old: Path | None) -> dict:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
           "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    if old is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(old), *filter(None, [env.get("PYTHONPATH")])])
    p = subprocess.run([sys.executable, "-c", TICKS, str(root)], env=env, capture_output=True,
                       text=True, cwd=tempfile.gettempdir(), timeout=600)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or not lines:
        raise SystemExit(f"the ticks failed ({'old' if old else 'new'}):\n{p.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--old", type=Path, required=True, help="a folder holding the other radtrack")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "radtrack-summary-bench")
    parser.add_argument("--json", type=Path, default=None, help="write every number here too")
    args = parser.parse_args(argv)
    if not (args.old / "radtrack" / "__init__.py").is_file():
        parser.error(f"--old {args.old}: no radtrack package there")
    root = store(args.store)
    pairs = []
    for i in range(args.pairs):
        got = {}
        for which in (("old", "new") if i % 2 == 0 else ("new", "old")):
            got[which] = ticks(root, args.old.resolve() if which == "old" else None)
        if not got["old"]["tree"].startswith(str(args.old.resolve())) or got["old"]["shape"] != got["new"]["shape"]:
            raise SystemExit(f"not two versions of one answer: {got}")
        ratio = sum(got["new"]["ticks_ms"]) / sum(got["old"]["ticks_ms"])
        pairs.append({**got, "ratio": ratio, "when": time.strftime("%H:%M:%S", time.gmtime())})
        print(f"pair {i + 1}: " + ", ".join(
            f"{w} {sum(got[w]['ticks_ms']):.0f} ms {[round(t) for t in got[w]['ticks_ms']]}" for w in ("old", "new"))
            + f", new/old {ratio:.2f}, load {got['new']['load']:.1f}", flush=True)
    ratios = [p["ratio"] for p in pairs]
    print(f"median sum: old {statistics.median(sum(p['old']['ticks_ms']) for p in pairs):.0f} ms, new "
          f"{statistics.median(sum(p['new']['ticks_ms']) for p in pairs):.0f} ms; new/old median "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    if args.json:
        args.json.write_text(json.dumps(pairs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
