"""SLURM executor overhead: the same one-row sheet run locally and as a SLURM job.

Starts the tests' single-node SLURM (tests/slurm_cluster.py: slurmctld + slurmd + munged on
127.0.0.1, needs root and Debian's slurm-wlm + munge), then alternates ``radtrack
sheet.csv`` (local) and ``radtrack sheet.csv --executor slurm --shared-fs`` on a fresh
copy of a one-row sheet (tests/scripts/busy.py for --seconds, listener top) into one
SQLite store, and reports wall time per launch (median, min-max), the slurm/local ratio,
and the time from submission to the job's workload starting (the job's first line).

    .venv/bin/python benchmarks/slurm_overhead.py [--repeats 5] [--seconds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from slurm_cluster import start_cluster, why_no_slurm  # noqa: E402

SHEET = ("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
         "{exp},1,,,,-,busy.py,top,{seconds}\n")


def _launch(work: Path, exp: str, seconds: float, env: dict[str, str],
            slurm: bool) -> tuple[float, float | None]:
    folder = work / exp
    folder.mkdir()
    shutil.copy(REPO / "tests" / "scripts" / "busy.py", folder / "busy.py")
    sheet = folder / "sheet.csv"
    sheet.write_text(SHEET.format(exp=exp, seconds=seconds))
    args = [sys.executable, "-m", "radtrack", str(sheet)]
    if slurm:
        args += ["--executor", "slurm", "--shared-fs"]
    t0 = time.time()
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    wall = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(f"{exp} failed:\n{p.stdout}\n{p.stderr}")
    started = None
    if slurm:
        # the launcher in the job records when it released the workload (unix seconds)
        released = list((work / "jobhome" / "runs").glob("*/released"))
        newest = max(released, key=lambda f: f.stat().st_mtime)
        started = float(newest.read_text()) - t0
    return wall, started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    reason = why_no_slurm()
    if reason:
        raise SystemExit(f"cannot start SLURM here: {reason}")
    cluster = start_cluster()
    work = Path(tempfile.mkdtemp(prefix="radtrack-slurm-bench-"))
    env = {**os.environ, **cluster.env, "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}",
           "RADTRACK_HOME": str(work / ".radtrack"), "RADTRACK_JOB_HOME": str(work / "jobhome"),
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    local, slurm, start = [], [], []
    try:
        _launch(work, "warmup", a.seconds, env, slurm=False)  # creates the store's tables
        for i in range(a.repeats):
            local.append(_launch(work, f"local{i}", a.seconds, env, slurm=False)[0])
            wall, started = _launch(work, f"slurm{i}", a.seconds, env, slurm=True)
            slurm.append(wall)
            start.append(started or 0.0)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
    load = os.getloadavg()

    def cell(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"

    ratios = [s / lo for s, lo in zip(slurm, local, strict=True)]
    print(f"# one-row sheet, busy.py {a.seconds:g} s, listener top, {a.repeats} pairs; "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| launch | wall s, median (min-max) |")
    print("| --- | --- |")
    print(f"| local | {cell(local)} |")
    print(f"| slurm (submit, wait, write back) | {cell(slurm)} |")
    print(f"| slurm: submission to workload release | {cell(start)} |")
    print(f"| ratio slurm/local per pair | {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
