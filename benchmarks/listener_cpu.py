"""Listener CPU by GPUs watched, beside MLflow's system-metrics monitor, in one run.

  python benchmarks/listener_cpu.py --out DIR [--gpus 1,2,4] [--intervals 0.1,1] \
      [--sets smi+top] [--seconds 30] [--slices 3] [--mlflow-seconds 20] [--no-mlflow] \
      [--sharing solo|shared] [--fake auto|yes|no] [--gpu-load]

For each GPU count n of ``--gpus`` (``CUDA_VISIBLE_DEVICES`` = the first n GPUs, in NVML
order) and each interval of ``--intervals``:

- radtrack: the listener set(s) of ``--sets`` started as the launcher starts a row's
  listeners (radtrack/run/listen.py ``start_listeners``: smi and top in one shared sampler
  process), their lines taken by a real spooling sink; CPU = the listener processes (the
  scheduler's run time of all their threads, /proc/<pid>/task/*/schedstat) plus the
  launcher's intake (its reader threads' CPU clocks). The row is told its GPUs are its own
  (``RADTRACK_SHARED_GPUS`` empty, what the launcher says for a row alone on its GPUs;
  ``--sharing shared``: as a co-located row, every GPU's per-process SM shares read);
- MLflow: ``mlflow.system_metrics``' ``SystemMetricsMonitor`` (what ``log_system_metrics``
  starts) at the same sampling interval, logging to a SQLite store, in a process of its
  own; CPU = that whole process. Its GPUMonitor reads every GPU NVML sees whatever
  ``CUDA_VISIBLE_DEVICES`` says; here it is given the same n GPUs as radtrack (its handles
  cut to them), so both watch the same GPUs.

Each measured window (``--seconds``; MLflow's ``--mlflow-seconds``: it reads everything
every sample) follows ``--warmup`` seconds and is cut into ``--slices`` equal slices; the
table gives the median slice and the range of slices (% of one core), the JSON the whole
window's mean too, and the per-GPU slope is the least-squares slope of the window means
over the GPU counts (the marginal CPU of one more GPU watched). The default 30-s window
holds one of smi's 30-s energy counter reads per GPU, as a long run does.

NVML: real pynvml where a GPU answers, else the NVML doubles of tests/doubles (``--fake
auto``: as many H100s as the largest count, with the driver's power sample ring, the PCIe
and ECC fields; the doubles are Python, so their own cost is in the listener's CPU: compare
runs of the same kind only); with the doubles the NVML calls each listener process made
are counted per GPU (the scenario's ``call_log``) and reported per second.
Writes ``DIR/listener_cpu.json`` (appended: a list of runs) and ``DIR/listener_cpu.md``.

On a 4-GPU host: ``python benchmarks/listener_cpu.py --out DIR --fake no --gpu-load``
(about 7 minutes: 12 windows, each with its start-up and warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


# -- NVML: real or the doubles ---------------------------------------------------------------
def _fake_env(tmp: Path, gpus: int) -> tuple[dict[str, str], Path]:
    sys.path.insert(0, str(ROOT / "tests" / "doubles"))
    import nvml_scenario

    log = tmp / "nvml-calls.jsonl"
    env = nvml_scenario.write(tmp / "scenario.json", [
        {"uuid": f"GPU-00000000-0000-0000-0000-{i:012d}", "watts": 300, "procs": [],
         "power_ring": True, "energy_field": True,
         "fields": {"197": 1_000_000, "198": 2_000_000, "3": 0, "4": 0}}
        for i in range(gpus)], call_log=str(log))
    return env, log


def _nvml_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


# -- CPU clocks ------------------------------------------------------------------------------
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


def _slices(cpu: Any, seconds: float, slices: int) -> tuple[list[float], float]:
    """``cpu()`` (CPU seconds so far) read at the edges of ``slices`` equal slices of
    ``seconds``: each slice's CPU % of one core, and the whole window's."""
    pct = []
    c0 = cpu()
    t0 = time.monotonic()
    c, t = c0, t0
    for k in range(1, slices + 1):
        time.sleep(max(t0 + k * seconds / slices - time.monotonic(), 0.0))
        c1, t1 = cpu(), time.monotonic()
        pct.append(100 * (c1 - c) / (t1 - t))
        c, t = c1, t1
    return pct, 100 * (c - c0) / (t - t0)


def _summary(pct: list[float], mean: float) -> dict[str, Any]:
    return {"median_pct": statistics.median(pct), "min_pct": min(pct), "max_pct": max(pct),
            "mean_pct": mean, "slices_pct": pct}


# -- radtrack ------------------------------------------------------------------------------
def measure_radtrack(spec: str, interval: float, env: dict[str, str], tmp: Path, a: Any) -> dict[str, Any]:
    from radtrack.listeners.protocol import parse_choices
    from radtrack.run.listen import start_listeners
    from radtrack.store.sink import Sink

    choices = parse_choices(spec) or []
    entries = [(c.name, c.interval or interval) for c in choices]
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=spec.replace("+", "_").replace("@", "at")))
    sink = Sink.unbound(work / "spool", "bench")  # spools, as a run does before its run exists
    started = time.monotonic()
    procs = start_listeners(entries, sink, [], os.getpid(), work, env)
    try:
        deadline = time.monotonic() + 60
        for p in procs:
            if not p.wait_ready(deadline):
                return {"error": f"{p.name} not ready: {p.failure or 'no hello'}"}
        time.sleep(a.warmup)
        pids = {p.proc.pid for p in procs}
        readers = {id(p.reader): p.reader for p in procs}

        def cpu() -> float:
            return (sum(_proc_cpu(pid) for pid in pids)
                    + sum(_thread_cpu(t) for t in readers.values()))

        pct, mean = _slices(cpu, a.seconds, a.slices)
        failed = [p.name for p in procs if p.proc.poll() is not None]
    finally:
        for p in procs:
            p.stop()
        sink.spool.close_files()
    out = {"set": spec, "interval_s": interval, **_summary(pct, mean),
           "lifetime_s": time.monotonic() - started}
    if failed:
        out["error"] = f"listener process ended during the window: {', '.join(failed)}"
    return out


# -- MLflow's monitor ------------------------------------------------------------------------
def _mlflow_main(uri: str, interval: float) -> None:
    """In its own process: MLflow's system-metrics monitor on the GPUs of CUDA_VISIBLE_DEVICES,
    logging to ``uri``, until a line on stdin."""
    import logging

    logging.disable(logging.WARNING)
    from mlflow import MlflowClient
    from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("listener_cpu") or client.get_experiment(
        client.create_experiment("listener_cpu"))
    run = client.create_run(exp.experiment_id)
    monitor = SystemMetricsMonitor(run.info.run_id, sampling_interval=interval,
                                   samples_before_logging=1, tracking_uri=uri)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    watched = None
    for m in monitor.monitors:
        if isinstance(m, GPUMonitor) and visible is not None:
            keep = [int(e) for e in visible.split(",") if e.strip().isdigit()]
            m.gpu_handles = [m.gpu_handles[i] for i in keep if i < len(m.gpu_handles)]
            m.num_gpus = len(m.gpu_handles)
        if isinstance(m, GPUMonitor):
            watched = m.num_gpus
    monitor.start()
    print(json.dumps({"ready": True, "gpus": watched}), flush=True)
    sys.stdin.readline()
    monitor.finish()
    client.set_terminated(run.info.run_id)


def measure_mlflow(uri: str, interval: float, env: dict[str, str], a: Any) -> dict[str, Any]:
    p = subprocess.Popen([sys.executable, str(HERE), "_mlflow", uri, repr(interval)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdin is not None and p.stdout is not None
    try:
        line = p.stdout.readline()
        try:
            hello = json.loads(line)
        except ValueError:
            return {"error": f"MLflow's monitor did not start: {line.strip()[:200]}"}
        time.sleep(a.warmup)
        pct, mean = _slices(lambda: _proc_cpu(p.pid), a.mlflow_seconds, a.slices)
        ended = p.poll() is not None
    finally:
        try:
            p.stdin.write("stop\n")
            p.stdin.flush()
        except OSError:
            pass
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
    out = {"set": "mlflow", "interval_s": interval, "gpus_watched": hello.get("gpus"),
           **_summary(pct, mean)}
    if ended:
        out["error"] = "MLflow's monitor process ended during the window"
    return out


# -- GPU load --------------------------------------------------------------------------------
def _gpu_load(n: int) -> list[subprocess.Popen]:
    """A bursty bf16 matmul on each of the first ``n`` GPUs (benchmarks/listeners.py's: 20
    matmuls, then 20 ms of sleep), one process per GPU, children of this process: the
    listeners follow this process's tree, so the load is the run's own."""
    code = ("import torch,time\n"
            "a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=a.clone()\n"
            "while True:\n"
            "    for _ in range(20): c=a@b\n"
            "    torch.cuda.synchronize(); time.sleep(0.02)\n")
    try:
        import torch

        if not torch.cuda.is_available():
            return []
    except ImportError:
        return []
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    procs = [subprocess.Popen([sys.executable, "-c", code], env={**env, "CUDA_VISIBLE_DEVICES": str(i)})
             for i in range(n)]
    time.sleep(8)
    return procs


# -- tables ----------------------------------------------------------------------------------
def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of (GPUs, CPU %): the CPU of one more GPU watched."""
    if len({g for g, _ in points}) < 2:
        return None
    gm = statistics.fmean(g for g, _ in points)
    cm = statistics.fmean(c for _, c in points)
    return (sum((g - gm) * (c - cm) for g, c in points)
            / sum((g - gm) ** 2 for g, _ in points))


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if "median_pct" not in r:
        return f"error: {r.get('error', '?')}"
    return f"{r['median_pct']:.2f} % [{r['min_pct']:.2f}-{r['max_pct']:.2f}]"


def table(results: list[dict[str, Any]], gpus: list[int], intervals: list[float],
          sets: list[str]) -> tuple[str, dict[str, float | None]]:
    """The "listener CPU by GPUs watched" table and the per-GPU slopes (column -> % per GPU)."""
    columns = [(s, i) for s in [*sets, "mlflow"] for i in intervals
               if any(r["set"] == s and r["interval_s"] == i for r in results)]

    def name(s: str, i: float) -> str:
        return f"{'MLflow monitor' if s == 'mlflow' else s} at {i:g} s"

    def find(s: str, i: float, n: int) -> dict[str, Any] | None:
        return next((r for r in results if r["set"] == s and r["interval_s"] == i and r["gpus"] == n), None)

    rows = ["| GPUs watched | " + " | ".join(name(s, i) for s, i in columns) + " |",
            "| --- |" + " ---: |" * len(columns)]
    for n in gpus:
        rows.append(f"| {n} | " + " | ".join(_cell(find(s, i, n)) for s, i in columns) + " |")
    slopes: dict[str, float | None] = {}
    cells = []
    for s, i in columns:
        pts = [(n, r["mean_pct"]) for n in gpus if (r := find(s, i, n)) and "mean_pct" in r]
        slopes[name(s, i)] = slope(pts)
        v = slopes[name(s, i)]
        cells.append("-" if v is None else f"{v:+.3f} %")
    rows.append("| per GPU (slope of the means) | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n", slopes


def verdicts(results: list[dict[str, Any]], slopes: dict[str, float | None], gpus: list[int],
             intervals: list[float], sets: list[str]) -> list[str]:
    """The issue's targets, each with the figures it was judged on."""
    out = []
    limits = {0.1: 0.3, 1.0: 0.15}
    for s in sets:
        for i in intervals:
            v = slopes.get(f"{s} at {i:g} s")
            if i in limits and v is not None:
                out.append(f"{s} at {i:g} s: {v:.3f} % of a core per GPU "
                           f"({'meets' if v <= limits[i] else 'MISSES'} <= {limits[i]:g} %)")
            for n in gpus:
                ours = next((r for r in results if r["set"] == s and r["interval_s"] == i
                             and r["gpus"] == n and "mean_pct" in r), None)
                theirs = next((r for r in results if r["set"] == "mlflow" and r["interval_s"] == i
                               and r["gpus"] == n and "mean_pct" in r), None)
                if ours and theirs:
                    below = ours["mean_pct"] < theirs["mean_pct"]
                    out.append(f"{s} at {i:g} s, {n} GPU(s): {ours['mean_pct']:.2f} % vs MLflow "
                               f"{theirs['mean_pct']:.2f} % ({'below' if below else 'NOT below'})")
    return out


def _calls(log: Path, seen: int, lifetime: float) -> tuple[int, dict[str, float]]:
    """NVML calls per second per GPU of the listener processes that exited since line ``seen``."""
    if not log.exists():
        return seen, {}
    lines = log.read_text().splitlines()
    per: dict[str, float] = {}
    for line in lines[seen:]:
        x = json.loads(line)
        if "listeners" not in Path(x["argv"][0] if x["argv"] else "").parts:
            continue
        for counts in x["by_gpu"].values():
            for f, n in counts.items():
                per[f] = per.get(f, 0.0) + n / len(x["by_gpu"]) / lifetime
    return len(lines), {f: round(v, 2) for f, v in sorted(per.items(), key=lambda kv: -kv[1])}


def report(path: Path) -> int:
    """The tables of a listener_cpu.json (every run it holds), as the measuring run printed them."""
    for run in json.loads(path.read_text()):
        results = run["results"]
        gpus = sorted({r["gpus"] for r in results})
        intervals = sorted({r["interval_s"] for r in results})
        sets = list(dict.fromkeys(r["set"] for r in results if r["set"] != "mlflow"))
        md, slopes = table(results, gpus, intervals, sets)
        judged = verdicts(results, slopes, gpus, intervals, sets)
        print(f"### listener CPU by GPUs watched {run.get('label', '')} ({run.get('host', '')})\n\n"
              f"{md}\n" + "".join(f"- {v}\n" for v in judged))
    return 0


# -- main ------------------------------------------------------------------------------------
def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_mlflow":
        _mlflow_main(sys.argv[2], float(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="folder for listener_cpu.json/.md (required to measure)")
    ap.add_argument("--report", type=Path, metavar="JSON",
                    help="print the tables of a listener_cpu.json already written (no measuring)")
    ap.add_argument("--gpus", default=None,
                    help="GPU counts, CUDA_VISIBLE_DEVICES = the first n (default 1,2,4, those "
                         "the host has)")
    ap.add_argument("--intervals", default="0.1,1", help="sampling intervals (s), comma-separated")
    ap.add_argument("--sets", default="smi+top", help="comma-separated radtrack listener sets")
    ap.add_argument("--seconds", type=float, default=30.0, help="radtrack's measured window")
    ap.add_argument("--mlflow-seconds", type=float, default=20.0, help="MLflow's measured window")
    ap.add_argument("--slices", type=int, default=3, help="slices of each window (the spread)")
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds before each window")
    ap.add_argument("--no-mlflow", action="store_true", help="leave MLflow's monitor out")
    ap.add_argument("--sharing", choices=("solo", "shared"), default="solo",
                    help="the row alone on its GPUs (default) or co-located on all of them")
    ap.add_argument("--fake", choices=("auto", "yes", "no"), default="auto",
                    help="NVML doubles (tests/doubles): auto = when no GPU answers")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    ap.add_argument("--gpu-load", action="store_true",
                    help="a bursty bf16 matmul on each GPU meanwhile (with CUDA)")
    a = ap.parse_args()
    if a.report is not None:
        return report(a.report)
    if a.out is None:
        ap.error("--out is required to measure (or --report JSON)")
    intervals = [float(x) for x in a.intervals.split(",") if x.strip()]
    sets = [s.strip() for s in a.sets.split(",") if s.strip()]
    a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="listener_cpu-"))
    base = dict(os.environ)
    base["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    have = 0 if a.fake == "yes" else _nvml_count()
    fake = a.fake == "yes" or (a.fake == "auto" and have == 0)
    if a.gpus is None:
        gpus = [n for n in (1, 2, 4) if fake or n <= have] or [1]
    else:
        gpus = sorted({int(x) for x in a.gpus.split(",") if x.strip()})
    log = None
    if fake:
        extra, log = _fake_env(tmp, max(gpus))
        base.update(extra)
    elif have < max(gpus):
        print(f"listener_cpu: NVML sees {have} GPU(s); --gpus asks for {max(gpus)}", file=sys.stderr)
        return 2
    nvml = "NVML doubles (tests/doubles)" if fake else "real NVML"
    loads = _gpu_load(max(gpus)) if a.gpu_load and not fake else []
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    results: list[dict[str, Any]] = []
    seen = 0
    try:
        for n in gpus:
            env = {**base, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(n))),
                   "RADTRACK_SHARED_GPUS": "*" if a.sharing == "shared" else ""}
            for interval in intervals:
                for spec in sets:
                    r = {"gpus": n, "set": spec, "interval_s": interval,
                         **measure_radtrack(spec, interval, env, tmp, a)}
                    if log is not None:
                        seen, r["nvml_calls_per_s_per_gpu"] = _calls(log, seen, r.get("lifetime_s", 1.0))
                    print(json.dumps(r), flush=True)
                    results.append(r)
                if not a.no_mlflow:
                    r = {"gpus": n, "set": "mlflow", "interval_s": interval,
                         **measure_mlflow(uri, interval, env, a)}
                    print(json.dumps(r), flush=True)
                    results.append(r)
    finally:
        for p in loads:
            p.kill()
            p.wait()
    nvml += f", bf16 matmul load on {len(loads)} GPU(s)" if loads else ""
    host = (f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{nvml}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    md, slopes = table(results, gpus, intervals, sets)
    judged = verdicts(results, slopes, gpus, intervals, sets)
    text = (f"### listener CPU by GPUs watched {a.label} ({host})\n\n"
            f"% of one core: median of {a.slices} slices [range]; radtrack = listener processes + "
            f"the launcher's intake, {a.seconds:g}-s windows, the row {a.sharing} on its GPUs; "
            f"MLflow = its monitor's process, {a.mlflow_seconds:g}-s windows, the same GPUs; "
            f"after {a.warmup:g} s of warm-up\n\n{md}\n" + "".join(f"- {v}\n" for v in judged))
    print(text)
    with (a.out / "listener_cpu.md").open("a") as f:
        f.write(text + "\n")
    path = a.out / "listener_cpu.json"
    data = json.loads(path.read_text()) if path.exists() else []
    data.append({"label": a.label, "host": host, "sharing": a.sharing, "results": results,
                 "slopes_pct_per_gpu": slopes, "verdicts": judged})
    path.write_text(json.dumps(data, indent=1))
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
