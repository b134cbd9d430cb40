"""rapl_fake.py's advancing RAPL tree as a run's script, with a code window around its middle
half: ``python rapl_windowed.py ROOT LOG.json --steps 100 --step-s 0.02 zone=W ...``.

The window (``busy``) is recorded as RADTBenchmark records one (radtrack/script/codewindows.py,
to the file the launcher names in ``RADTRACK_WINDOWS_FILE``), without importing MLflow: the
tree keeps its pace. LOG.json gets rapl_fake's ``true_uj`` and ``wrap_at`` and ``window``:
the steps the window opened and closed after (each zone's true energy in it is
``true_uj[zone][end] - true_uj[zone][start]``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rapl_fake import AdvancingTree

from radtrack.script.codewindows import WindowRecorder


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("log", type=Path)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--step-s", type=float, default=0.02)
    p.add_argument("watts", nargs="+", help="zone=W")
    a = p.parse_args()
    tree = AdvancingTree(a.root, {z: float(w) for z, w in (x.split("=") for x in a.watts)}, a.step_s)
    windows = WindowRecorder(Path(os.environ["RADTRACK_WINDOWS_FILE"]))
    start, end = a.steps // 4, 3 * a.steps // 4
    for i in range(a.steps):
        if i == start:
            windows.begin("busy")
        time.sleep(a.step_s)
        tree.step()
        if i + 1 == end:
            windows.end("busy")
    a.log.write_text(json.dumps({"true_uj": tree.true_uj, "wrap_at": tree.wrap_at,
                                 "window": [start, end]}))


if __name__ == "__main__":
    main()
