"""What monitoring costs a workload: time per step, store space and CPU, per tool.

Runs a light workload (workloads/cifar_cnn.py: CPU, DataLoader and launch bound) and a
heavy one (workloads/resnet.py, bf16) in every mode: ``bare`` (no radtrack), ``none``
(under radtrack, no listener), each listener alone at 1 s and at 0.1 s, all monitoring
listeners at 0.1 s, and the profilers on the ``profile`` NVTX range. Repeats are rounds of
every mode, in alternating order (forward, then reversed), so drift hits every mode
alike. Per run: steady-state time per step (the workload's own ``block`` lines, the first
``--skip-blocks`` dropped), bytes of its fresh MLflow store (SQLite + artifacts) and metric
rows, CPU-seconds of the listener processes, the launcher and the workload.

CPU: every process of the run is read from /proc every 0.25 s; a process's last reading
misses at most its last 0.25 s. The launcher's figure is the whole tree's (os.wait4, exact)
minus every other process's, so those misses land there (an overestimate by at most
0.25 s times the CPU rate of the workload and listeners at their exit). For ``bare`` the
workload's figure is os.wait4's, exact.

Results go to a JSON file (``--out``, appended: one "batch" per call), so a GPU host's
time limit can be met with several calls; every mode is compared with the ``bare`` runs
of its own calls. ``--report`` prints the tables of what the file holds.

    python benchmarks/overhead.py --smoke --out /tmp/overhead-smoke.json          # CPU check
    python benchmarks/overhead.py --workloads heavy --modes none,smi@0.1 --out r.json
    python benchmarks/overhead.py --report --out r.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead_stats import tables  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MONITORS = ("smi", "dcgm", "top", "iostat")
MODES = ["bare", "none", *(f"{m}@{i}" for m in MONITORS for i in ("1", "0.1")), "all@0.1", "nsys", "ncu"]
SMOKE_MODES = ["bare", "none", "top@1", "top@0.1", "iostat@0.1"]
# (script, GPU args, --smoke args); the light one: 5 epochs of 2,000 steps (batch 4)
WORKLOADS = {
    "light": ("workloads/cifar_cnn.py", ["--epochs", "6", "--samples", "8000"],
              ["--smoke", "--epochs", "4", "--samples", "400"]),
    "heavy": ("workloads/resnet.py", ["--dtype", "bf16", "--steps", "300", "--log-every", "25"],
              ["--smoke", "--steps", "8", "--log-every", "1"]),
}
BLOCK_RE = re.compile(r"block (\d+)(?:/\d+)?: .*?step_time_s=([0-9.eE+-]+)")
POLL_S = 0.25


def command(mode: str, script: str, args: list[str], store: Path, interval_default: str = "1") -> list[str]:
    """The command line of one run in ``mode``."""
    target = [str(ROOT / script), *args]
    if mode == "bare":
        return [sys.executable, *target]
    if mode == "none":
        listeners, interval = "none", interval_default
    elif mode == "all@0.1":
        listeners, interval = "+".join(MONITORS), "0.1"
    elif mode in ("nsys", "ncu"):
        listeners, interval = mode, interval_default
    else:
        listeners, interval = mode.split("@")
    return [sys.executable, "-m", "radtrack", "-e", "overhead", "--tracking-uri",
            f"sqlite:///{store / 'mlflow.db'}", "-l", listeners, "--interval", interval, *target]


class TreeCpu:
    """CPU-seconds of every process under a root, by kind, from /proc every POLL_S."""

    def __init__(self, root: int):
        self.root = root
        self.last: dict[tuple[int, float], tuple[str, float]] = {}  # (pid, start) -> kind, CPU s
        self.kinds: dict[int, str] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _kind(self, p: psutil.Process) -> str:
        if p.pid in self.kinds:
            return self.kinds[p.pid]
        kind = "workload"
        try:
            if "radtrack.listeners" in " ".join(p.cmdline()):
                kind = "listeners"
            else:  # a listener's own child (dcgmi, the profiler) counts as the listener
                kind = next((self.kinds[a.pid] for a in p.parents() if self.kinds.get(a.pid) == "listeners"),
                            "workload")
        except psutil.Error:
            pass
        self.kinds[p.pid] = kind
        return kind

    def _loop(self) -> None:
        while not self.stop.wait(POLL_S):
            try:
                procs = psutil.Process(self.root).children(recursive=True)
            except psutil.Error:
                return
            for p in procs:
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        key = (p.pid, p.create_time())
                    self.last[key] = (self._kind(p), t.user + t.system)
                except psutil.Error:
                    continue

    def by_kind(self) -> dict[str, float]:
        out = {"listeners": 0.0, "workload": 0.0}
        for kind, cpu in self.last.values():
            out[kind] += cpu
        return out


def store_size(store: Path) -> tuple[int, int | None]:
    """(bytes of the store folder, metric rows in its database; None without one)."""
    total = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    db = store / "mlflow.db"
    if not db.exists():
        return total, None
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    return total, int(rows)


def run_one(workload: str, mode: str, smoke: bool, skip_blocks: int, work: Path) -> dict:
    script, gpu_args, smoke_args = WORKLOADS[workload]
    store = work / f"{workload}-{mode.replace('@', '-')}-{uuid.uuid4().hex[:8]}"
    store.mkdir(parents=True)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "NO_COLOR": "1"}
    if mode in ("nsys", "ncu"):
        env["RADTRACK_PROFILE_NVTX_RANGE"] = "profile"
    argv = command(mode, script, smoke_args if smoke else gpu_args, store)
    log = store / "stdout.txt"
    t0 = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=store, env=env)
        cpu = TreeCpu(proc.pid)
        cpu.thread.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    cpu.stop.set()
    cpu.thread.join()
    text = log.read_text(errors="replace")
    blocks = [float(s) for _, s in BLOCK_RE.findall(text)]
    steady = blocks[skip_blocks:] if len(blocks) > skip_blocks else []
    kinds = cpu.by_kind()
    tree = usage.ru_utime + usage.ru_stime
    size, rows = store_size(store)
    rec = {"workload": workload, "mode": mode, "ok": proc.returncode == 0 and bool(steady),
           "rc": proc.returncode, "wall_s": wall, "blocks": blocks,
           # blocks are equal-sized, so the mean of their step times is the time per step
           "step_s": sum(steady) / len(steady) if steady else None,
           "cpu_listeners_s": kinds["listeners"] if mode != "bare" else None,
           # bare: the root is the workload itself, and os.wait4 counts it exactly
           "cpu_workload_s": tree if mode == "bare" else kinds["workload"],
           "cpu_launcher_s": None if mode == "bare" else tree - kinds["listeners"] - kinds["workload"],
           "store_bytes": size if mode != "bare" else None, "metric_rows": rows}
    if not rec["ok"]:
        rec["tail"] = text[-1500:]
    shutil.rmtree(store, ignore_errors=True)
    return rec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="light,heavy", help="light, heavy or both (comma-separated)")
    p.add_argument("--modes", default=None, help=f"comma-separated, from {','.join(MODES)}; "
                   "bare is always added (default: all; --smoke: a CPU-only few)")
    p.add_argument("--repeats", type=int, default=5, help="rounds of every mode (default 5)")
    p.add_argument("--skip-blocks", type=int, default=2, help="blocks dropped as warm-up (default 2)")
    p.add_argument("--smoke", action="store_true", help="tiny CPU runs: checks the harness, not the numbers")
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no round that would end past this many seconds (a device call's limit)")
    p.add_argument("--out", type=Path, required=True, help="JSON results file, appended to")
    p.add_argument("--report", action="store_true", help="only print the tables of --out")
    a = p.parse_args(argv)
    records: list[dict] = json.loads(a.out.read_text()) if a.out.exists() else []
    workloads = [w for w in a.workloads.split(",") if w]
    if not a.report:
        modes = a.modes.split(",") if a.modes else (SMOKE_MODES if a.smoke else MODES)
        unknown = set(modes) - set(MODES)
        if unknown or any(w not in WORKLOADS for w in workloads):
            p.error(f"unknown mode or workload: {sorted(unknown) or workloads}")
        modes = ["bare", *(m for m in modes if m != "bare")]
        batch = uuid.uuid4().hex[:8]
        start = time.monotonic()
        round_s = 0.0
        with tempfile.TemporaryDirectory(prefix="overhead-") as tmp:
            for r in range(a.repeats):
                if a.budget_s is not None and r and time.monotonic() - start + round_s > a.budget_s:
                    print(f"budget: stopping after {r} rounds", flush=True)
                    break
                t_round = time.monotonic()
                order = modes if r % 2 == 0 else modes[::-1]
                for w in workloads:
                    for m in order:
                        rec = run_one(w, m, a.smoke, a.skip_blocks, Path(tmp))
                        rec.update(batch=batch, repeat=r, smoke=a.smoke)
                        records.append(rec)
                        a.out.write_text(json.dumps(records, indent=1))
                        step = f"{1e3 * rec['step_s']:.3f} ms/step" if rec["ok"] else f"FAILED rc={rec['rc']}"
                        print(f"round {r + 1} {w} {m}: {step}, {rec['wall_s']:.1f} s", flush=True)
                round_s = time.monotonic() - t_round
    all_modes = list(dict.fromkeys([*MODES, *(r["mode"] for r in records)]))
    print(tables(records, all_modes, workloads))
    failed = [r for r in records if not r.get("ok")]
    for r in failed[-3:]:
        print(f"failed: {r['workload']} {r['mode']} rc={r['rc']}\n{r.get('tail', '')}", file=sys.stderr)
    return 1 if failed and not a.report else 0


if __name__ == "__main__":
    sys.exit(main())
