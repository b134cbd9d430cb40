"""CPU a listener costs per sample: the real listener processes, started as the launcher
starts them, for ``--seconds`` at ``--interval``, their lines taken by a real spooling sink.

  python benchmarks/listener_cpu.py --out DIR [--seconds 20] [--interval 0.1] \
      [--sets smi,top,smi+top,smi+dcgm+top,smi+top+dcgm@1] [--fake auto|yes|no]

Per set of listeners (``smi+top``: a run with those listeners; smi and dcgm share one
sampler process as in a run), after ``--warmup`` seconds, over the window:

- CPU % of one core of each listener process (the scheduler's run time of its threads,
  /proc/<pid>/task/*/schedstat, to the ns), and per line (µs/line) and per value
  (µs/point) it wrote;
- the launcher's intake: CPU % of its reader threads (parsing the lines, spooling them),
  from the threads' own CPU clocks (pthread_getcpuclockid);
- lines/s and points/s.

NVML: real pynvml where a GPU answers (the H100 host), else the NVML doubles of
tests/doubles (one GPU with the driver's power sample ring, ``--fake auto``; the doubles
are autospec mocks, so their own Python cost is in the listener's CPU there: compare runs
of the same kind only). Writes ``DIR/listener_cpu.json`` and ``DIR/listener_cpu.md``.
On the GPU host: ``python benchmarks/listener_cpu.py --out DIR --fake no --gpu-load``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
DEFAULT_SETS = "smi,top,smi+top,smi+dcgm+top,smi+top+dcgm@1"


def _fake_env(tmp: Path) -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "tests" / "doubles"))
    import nvml_scenario

    return nvml_scenario.write(tmp / "scenario.json", [
        {"uuid": "GPU-00000000-0000-0000-0000-000000000001", "watts": 300, "procs": [],
         "power_ring": True}])


def _nvml_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount() > 0
    except Exception:
        return False


def _thread_cpu(t: threading.Thread | None) -> float:
    """CPU seconds of a live thread of this process (0 when it is gone), to the ns."""
    if t is None or t.ident is None or not t.is_alive():
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    except (OSError, AttributeError):
        return 0.0


def _proc_cpu(pid: int) -> float:
    """CPU seconds of a process, all its threads, to the ns (/proc/<pid>/task/*/schedstat:
    the scheduler's own run time, not 10-ms ticks); psutil's ticks elsewhere."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError):
        pass
    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _counts(sink: Any, names: list[str]) -> dict[str, tuple[int, int, int]]:
    """listener -> (lines, samples, points) taken so far."""
    out = {}
    with sink.spool.lock:
        for n in names:
            s = sink.spool.streams.get(n)
            out[n] = (s.lines, s.samples, sum(len(p.values) for p in s.pending)) if s else (0, 0, 0)
    return out


def measure(spec: str, interval: float, seconds: float, warmup: float, env: dict[str, str],
            tmp: Path) -> dict[str, Any]:
    from radtrack.listeners.protocol import parse_choices
    from radtrack.run.listen import start_listeners
    from radtrack.store.sink import Sink

    choices = parse_choices(spec) or []
    entries = [(c.name, c.interval or interval) for c in choices]
    names = [n for n, _ in entries]
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=spec.replace("+", "_").replace("@", "at")))
    sink = Sink.unbound(work / "spool", "bench")  # spools, as a run does before its run exists
    procs = start_listeners(entries, sink, [], os.getpid(), work, env)
    try:
        deadline = time.monotonic() + 60
        for p in procs:
            if not p.wait_ready(deadline):
                return {"error": f"{p.name} not ready: {p.failure or 'no hello'}"}
        time.sleep(warmup)
        pids = {p.proc.pid: "+".join(q.name for q in procs if q.proc is p.proc) for p in procs}
        readers = {id(p.reader): p.reader for p in procs}
        cpu0 = {pid: _proc_cpu(pid) for pid in pids}
        rd0 = sum(_thread_cpu(t) for t in readers.values())
        n0 = _counts(sink, names)
        t0 = time.monotonic()
        time.sleep(seconds)
        cpu1 = {pid: _proc_cpu(pid) for pid in pids}
        rd1 = sum(_thread_cpu(t) for t in readers.values())
        n1 = _counts(sink, names)
        wall = time.monotonic() - t0
        failed = [p.name for p in procs if p.proc.poll() is not None]
    finally:
        for p in procs:
            p.stop()
        sink.spool.close_files()
    out: dict[str, Any] = {"set": spec, "interval_s": interval, "window_s": round(wall, 2),
                           "processes": {}}
    if failed:
        out["error"] = f"listener process ended during the window: {', '.join(failed)}"
    for pid, label in pids.items():
        members = label.split("+")
        lines = sum(n1[m][0] - n0[m][0] for m in members)
        points = sum(n1[m][2] - n0[m][2] for m in members)
        cpu = cpu1[pid] - cpu0[pid]
        out["processes"][label] = {
            "cpu_pct_of_core": 100 * cpu / wall, "lines_per_s": lines / wall,
            "points_per_s": points / wall,
            "us_per_line": 1e6 * cpu / lines if lines else None,
            "us_per_point": 1e6 * cpu / points if points else None}
    lines = sum(n1[m][0] - n0[m][0] for m in names)
    points = sum(n1[m][2] - n0[m][2] for m in names)
    out["listeners_cpu_pct"] = sum(p["cpu_pct_of_core"] for p in out["processes"].values())
    out["intake_cpu_pct"] = 100 * (rd1 - rd0) / wall
    out["intake_us_per_line"] = 1e6 * (rd1 - rd0) / lines if lines else None
    out["lines_per_s"], out["points_per_s"] = lines / wall, points / wall
    return out


def wire_costs(n: int = 300) -> dict[str, float]:
    """CPU per second of smi's lines for one GPU at 0.1 s (a 10-value reading and the 50
    driver power samples read once a second), in this process: the listener's side (clean
    and encode the lines: runner) and the launcher's intake (decode, spool, queue:
    Spool.append), with whatever wire format this tree writes."""
    from radtrack.listeners import runner
    from radtrack.listeners.base import TimedSample
    from radtrack.store.spool import Spool

    key = "smi/gpu0/power_sample_w"
    values = {f"smi/gpu0/q{i}_w": 1.5 + i for i in range(10)}
    keys = set(values) | {key}
    timed = [TimedSample(1.0 + i * 0.02, {key: 300.25}, {key: 5} if i == 49 else None)
             for i in range(50)]

    def lines() -> list[str]:
        out = [runner._line(1.0, values, keys)]
        if hasattr(runner, "_batches"):  # columnar batch lines (issue 25)
            return out + runner._batches(timed, keys, None)
        return out + [runner._line(ts.t, ts.values, keys, ts.resume) for ts in timed]

    c = time.thread_time()
    for _ in range(n):
        "".join(lines())
    listener = (time.thread_time() - c) / n
    spool = Spool(Path(tempfile.mkdtemp(prefix="wire-")))
    spool.dir.mkdir(exist_ok=True)
    batch = lines()
    c = time.thread_time()
    for _ in range(n):
        for line in batch:
            spool.append("smi", line)
    intake = (time.thread_time() - c) / n
    spool.close_files()
    return {"lines_per_s": float(len(batch)), "listener_us_per_s": 1e6 * listener,
            "intake_us_per_s": 1e6 * intake}


def table(results: list[dict[str, Any]], header: str) -> str:
    rows = [header, "",
            "| set | process | CPU % of a core | lines/s | points/s | µs CPU/line | µs CPU/point |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]

    def f(v: float | None, d: int = 1) -> str:
        return "-" if v is None else f"{v:,.{d}f}"

    for r in results:
        if "processes" not in r:
            rows.append(f"| {r['set']} | {r.get('error', '?')} | | | | | |")
            continue
        for label, p in r["processes"].items():
            rows.append(f"| {r['set']} | {label} | {f(p['cpu_pct_of_core'], 2)} | {f(p['lines_per_s'])} "
                        f"| {f(p['points_per_s'])} | {f(p['us_per_line'])} | {f(p['us_per_point'])} |")
        rows.append(f"| {r['set']} | **all listeners** | **{f(r['listeners_cpu_pct'], 2)}** "
                    f"| {f(r['lines_per_s'])} | {f(r['points_per_s'])} | | |")
        rows.append(f"| {r['set']} | launcher intake (readers) | {f(r['intake_cpu_pct'], 2)} | | "
                    f"| {f(r['intake_us_per_line'])} | |")
        if r.get("error"):
            rows.append(f"| {r['set']} | error: {r['error']} | | | | | |")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for listener_cpu.json/.md")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per set")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds before the window")
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--sets", default=DEFAULT_SETS, help="comma-separated listener sets")
    ap.add_argument("--fake", choices=("auto", "yes", "no"), default="auto",
                    help="NVML doubles (tests/doubles): auto = when no GPU answers")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    ap.add_argument("--gpu-load", action="store_true",
                    help="a bursty bf16 matmul on the GPU meanwhile (benchmarks/listeners.py's)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="listener_cpu-"))
    env = dict(os.environ)
    fake = a.fake == "yes" or (a.fake == "auto" and not _nvml_present())
    if fake:
        env.update(_fake_env(tmp))
    nvml = "NVML doubles (tests/doubles)" if fake else "real NVML"
    load = None
    if a.gpu_load and not fake:
        sys.path.insert(0, str(HERE.parent))
        from listeners import _gpu_load  # benchmarks/listeners.py

        load = _gpu_load()
    results = []
    try:
        for spec in a.sets.split(","):
            r = measure(spec.strip(), a.interval, a.seconds, a.warmup, env, tmp)
            print(json.dumps(r), flush=True)
            results.append(r)
    finally:
        if load is not None:
            load.kill()
            load.wait()
    nvml += ", bf16 matmul load" if load is not None else ""
    host = (f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{nvml}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    header = (f"### listener CPU {a.label} ({host})\n\n{a.seconds:g}-s window after {a.warmup:g} s, "
              f"interval {a.interval:g} s")
    wire = wire_costs()
    md = table(results, header) + (
        f"\nwire, one GPU's smi lines for a second at 0.1 s: {wire['lines_per_s']:.0f} lines, "
        f"listener {wire['listener_us_per_s']:.0f} µs CPU, launcher intake "
        f"{wire['intake_us_per_s']:.0f} µs CPU\n")
    print(md)
    (a.out / "listener_cpu.md").open("a").write(md + "\n")
    data = json.loads((a.out / "listener_cpu.json").read_text()) if (a.out / "listener_cpu.json").exists() else []
    data.append({"label": a.label, "host": host, "results": results, "wire": wire})
    (a.out / "listener_cpu.json").write_text(json.dumps(data, indent=1))
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
