"""Listener and sink benchmarks, side by side in one run on one machine.

  python benchmarks/listeners.py --out DIR [--duration 30] [--interval 0.1] [--gpu-load]

Sections (each printed as a table and saved to DIR/listeners.json):
  sink        points/s into a fresh SQLite store: one mlflow.log_metrics call per sample
              (radT's way), raw MlflowClient.log_batch of 1000, and radtrack's Sink.
  collectors  CPU % of one core (steady state, the collector's whole process tree),
              samples/s captured, points/s stored and points lost, for
              (a) radtrack smi+dcgm+top at --interval, and smi+top at --interval with
              dcgm@1, each twice: smi and dcgm in one shared sampler process (what the
              launcher does) and in separate processes (RADTRACK_SHARED_SAMPLER=0, the
              code before the shared sampler), (b) a radT-style baseline (nvidia-smi -lms
              subprocess parsed, one log_metrics per sample) at the same interval,
              (c) MLflow's system metrics monitor at 1 s.
  costs       CPU and wall time per call of every reading the listeners make
              (benchmarks/listener_costs.py), under the GPU load when there is one.
  power       with an NVIDIA GPU: distinct power readings per second at 0.1 s, and run
              energy from the hardware counter vs integrated power.
A GPU matmul load runs during collectors/power with --gpu-load (when CUDA is available).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
HERE = Path(__file__).resolve()
SMI_FIELDS = ("timestamp,power.draw,utilization.gpu,utilization.memory,memory.used,memory.total,"
              "temperature.gpu,clocks.sm,clocks.mem,pstate,fan.speed,pcie.link.gen.current,"
              "clocks_event_reasons.active")


def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(uri)


def _fresh_store(tmp: Path, name: str) -> str:
    return f"sqlite:///{tmp / (name + '.db')}"


def _count_points(uri: str, run_id: str) -> int:
    import sqlite3

    db = uri.removeprefix("sqlite:///")
    with sqlite3.connect(db) as con:
        return con.execute("select count(*) from metrics where run_uuid = ?", (run_id,)).fetchone()[0]


# --- sink throughput -------------------------------------------------------------------------
def bench_sink(tmp: Path, keys: int = 50) -> dict[str, dict[str, float]]:
    import mlflow
    from mlflow.entities import Metric

    from radtrack.store.sink import Sink

    out: dict[str, dict[str, float]] = {}
    samples = [{f"bench/k{j}_pct": float(i * j % 97) for j in range(keys)} for i in range(2000)]

    uri = _fresh_store(tmp, "per_sample")
    mlflow.set_tracking_uri(uri)
    radt_keys = 13  # radT's nvidia-smi sample: 13 fields, one log_metrics call per sample
    with mlflow.start_run() as run:
        n = 300
        t0 = time.perf_counter()
        for i in range(n):
            mlflow.log_metrics(dict(list(samples[i].items())[:radt_keys]), step=i)
        dt = time.perf_counter() - t0
    out[f"per-sample log_metrics, {radt_keys} keys/call (radT)"] = {
        "points": n * radt_keys, "seconds": dt, "points_per_s": n * radt_keys / dt,
        "stored": _count_points(uri, run.info.run_id)}

    uri = _fresh_store(tmp, "log_batch")
    c = _client(uri)
    rid = c.create_run(c.create_experiment("b")).info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now + i, i) for i, s in enumerate(samples) for k, v in s.items()]
    t0 = time.perf_counter()
    for i in range(0, len(metrics), 1000):
        c.log_batch(rid, metrics=metrics[i:i + 1000])
    dt = time.perf_counter() - t0
    out["MlflowClient.log_batch(1000)"] = {"points": len(metrics), "seconds": dt,
                                           "points_per_s": len(metrics) / dt,
                                           "stored": _count_points(uri, rid)}

    for label, bulk in (("radtrack Sink, SQL bulk path (default)", True),
                        ("radtrack Sink, log_batch path", False)):
        uri = _fresh_store(tmp, f"sink{int(bulk)}")
        c = _client(uri)
        rid = c.create_run(c.create_experiment("s")).info.run_id
        sink = Sink(c, rid, tmp / f"spool{int(bulk)}", uri, sql_bulk=bulk)
        t0 = time.perf_counter()
        for i, s in enumerate(samples):
            sink.feed("bench", json.dumps({"type": "sample", "t": time.time() + i * 1e-3, "v": s}))
        ok = sink.ship()
        dt = time.perf_counter() - t0
        out[label] = {"points": len(metrics), "seconds": dt, "points_per_s": len(metrics) / dt,
                      "stored": _count_points(uri, rid), "ok": ok}
    return out


# --- collectors -------------------------------------------------------------------------------
def _collector_main(kind: str, interval: float, workdir: Path) -> None:
    """Runs in a subprocess: set up, print READY, count at 'start' and 'stop', drain, report."""
    uri = _fresh_store(workdir, "".join(c if c.isalnum() else "_" for c in kind))
    counts: dict[str, float] = {}
    if kind.startswith("radtrack"):
        from radtrack.listeners import registry
        from radtrack.run.listen import SHARED_SAMPLER_ENV, start_listeners
        from radtrack.store.sink import Sink

        c = _client(uri)
        rid = c.create_run(c.create_experiment(kind)).info.run_id
        sink = Sink(c, rid, workdir / "spool", uri)
        sink.start()
        wanted = kind.partition(":")[2].split("+") if ":" in kind else ["smi", "dcgm", "top"]
        entries = [registry.split(n) for n in wanted]
        entries = [(n, every or interval) for n, every in entries if registry.availability(n)]
        names = [n for n, _ in entries]
        env = dict(os.environ)
        if kind.startswith("radtrack-separate"):  # every listener in a process of its own
            env[SHARED_SAMPLER_ENV] = "0"
        # as the launcher starts a run's listeners: smi and dcgm (GPM) share one process
        procs = start_listeners(entries, sink, [], os.getpid(), workdir, env)
        counts["processes"] = len({id(p.proc) for p in procs})
        for p in procs:
            p.wait_ready(time.monotonic() + 30)

        def emitted() -> int:
            return sum(sink.emitted(n) for n in names)

        def points() -> int:
            return sink.stored

        def finish() -> None:
            for p in procs:
                p.stop()
            sink.close(retry_for=60)
        counts["listeners"] = len(names)
        counts["names"] = "+".join(wanted)  # type: ignore[assignment]
    elif kind == "radt":
        import mlflow

        mlflow.set_tracking_uri(uri)
        run = mlflow.start_run()
        smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits",
                                f"-lms={int(interval * 1000)}"], stdout=subprocess.PIPE, text=True)
        state = {"lines": 0, "stored": 0}
        names = SMI_FIELDS.split(",")[1:]

        def consume() -> None:
            assert smi.stdout is not None
            for line in smi.stdout:
                state["lines"] += 1
                vals = [v.strip() for v in line.split(",")][1:]
                m = {}
                for k, v in zip(names, vals, strict=False):
                    try:
                        m[k.replace(".", "_")] = float(v.lstrip("P"))
                    except ValueError:
                        continue
                mlflow.log_metrics(m, step=state["lines"])  # radT: one call per sample
                state["stored"] += len(m)
        t = threading.Thread(target=consume, daemon=True)
        t.start()
        time.sleep(1.0)

        def emitted() -> int:
            return state["lines"]

        def points() -> int:
            return state["stored"]

        def finish() -> None:
            smi.terminate()
            smi.wait()
            t.join(timeout=120)
            mlflow.end_run()
    else:  # mlflow system metrics
        import mlflow

        mlflow.set_tracking_uri(uri)
        mlflow.set_system_metrics_sampling_interval(1)
        run = mlflow.start_run(log_system_metrics=True)
        rid = run.info.run_id
        time.sleep(2.0)

        def emitted() -> int:
            return _count_points(uri, rid)

        points = emitted

        def finish() -> None:
            mlflow.end_run()
    print("READY", flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        counts[f"{cmd}_emitted"] = emitted()
        counts[f"{cmd}_points"] = points()
        counts[f"{cmd}_time"] = time.monotonic()
        if cmd == "stop":
            break
    finish()
    counts["final_points"] = points()
    counts["final_emitted"] = emitted()
    print(json.dumps(counts), flush=True)


def _tree_cpu(proc: psutil.Process) -> float:
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def bench_collector(kind: str, interval: float, duration: float, tmp: Path) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=kind))
    p = subprocess.Popen([sys.executable, str(HERE), "_collector", kind, str(interval), str(work)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdin is not None and p.stdout is not None
    ready = p.stdout.readline().strip()
    if ready != "READY":
        raise RuntimeError(f"{kind} collector failed to start: {ready}")
    time.sleep(2.0)  # steady state: start-up costs are not the collector's running cost
    proc = psutil.Process(p.pid)
    cpu0 = _tree_cpu(proc)
    t0 = time.monotonic()
    p.stdin.write("start\n")
    p.stdin.flush()
    time.sleep(duration)
    cpu1 = _tree_cpu(proc)
    wall = time.monotonic() - t0
    p.stdin.write("stop\n")
    p.stdin.flush()
    result = json.loads(p.stdout.readline())
    p.wait(timeout=180)
    window = result["stop_time"] - result["start_time"]
    emitted = result["stop_emitted"] - result["start_emitted"]
    stored = result["stop_points"] - result["start_points"]
    out = {"cpu_pct_of_core": 100 * (cpu1 - cpu0) / wall,
           "samples_per_s": emitted / window, "points_stored_per_s": stored / window}
    if kind.startswith("radtrack"):
        out["listeners"] = result.get("names", "")
        out["processes"] = result.get("processes", "")
        # every emitted point must be stored by the end (the sink flushes on close)
        out["points_lost"] = 0 if result["final_points"] >= result["stop_points"] else -1
    elif kind == "radt":
        out["lines_emitted_total"] = result["final_emitted"]
    return out


# --- one listener alone -----------------------------------------------------------------------
def bench_one_listener(name: str, interval: float, seconds: float) -> dict[str, float]:
    """CPU of one listener subprocess alone (steady state), reading its output like the sink."""
    p = subprocess.Popen([sys.executable, "-m", "radtrack.listeners", name, "--interval", str(interval),
                          "--pid", str(os.getpid())], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    hello = json.loads(p.stdout.readline())  # a shared sampler's later hellos count as no sample
    if hello.get("type") != "hello":
        p.kill()
        return {"error": 1.0}
    time.sleep(1.0)
    proc = psutil.Process(p.pid)
    c0 = _tree_cpu(proc)
    t0 = time.monotonic()
    wall0 = time.time()
    n = 0
    keys = 0
    while time.monotonic() - t0 < seconds:
        msg = json.loads(p.stdout.readline())
        if msg.get("t", 0) >= wall0:  # lines buffered before the window do not count
            n += 1
        keys = max(keys, len(msg.get("v", {})))
    c1 = _tree_cpu(proc)
    wall = time.monotonic() - t0
    p.terminate()
    p.wait()
    return {"cpu_pct_of_core": 100 * (c1 - c0) / wall, "samples_per_s": n / wall,
            "metrics_per_sample": float(keys)}


# --- where a listener's time goes --------------------------------------------------------------
def profile_listener(name: str, n: int = 200) -> str:
    import cProfile
    import io
    import pstats

    from radtrack.listeners import registry
    from radtrack.listeners.base import ListenerConfig

    lst = registry.get(name)(ListenerConfig(interval=0.1, pid=os.getpid()))
    lst.probe()
    prof = cProfile.Profile()
    c0 = time.process_time()
    prof.enable()
    for _ in range(n):
        lst.sample()
        time.sleep(0.02)
    prof.disable()
    per = (time.process_time() - c0) / n * 1000
    lst.close()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
    return f"{name}: {per:.3f} ms CPU per sample\n" + buf.getvalue()


# --- power capture ----------------------------------------------------------------------------
def _driver_power_samples(stop: threading.Event, into: list[tuple[float, float]]) -> None:
    """Collect the driver's own power samples (nvmlDeviceGetSamples, ~50 Hz on H100) once a
    second: a reference for how well 10 Hz polling integrates to the counter's energy."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    last = 0
    while True:
        done = stop.wait(1.0)
        try:
            _, got = pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, last)
        except pynvml.NVMLError:
            got = []
        for smp in got:
            if smp.timeStamp > last:
                into.append((smp.timeStamp / 1e6, smp.sampleValue.uiVal / 1000.0))
        if got:
            last = max(last, *(smp.timeStamp for smp in got))
        if done:
            return


def bench_power(tmp: Path, seconds: float = 20.0, label: str = "") -> dict[str, float]:
    import numpy as np
    import pandas as pd

    from radtrack.compute.stats import counter_delta, integrate
    from radtrack.run.listen import ListenerProc
    from radtrack.store.sink import Sink, read_spool

    uri = _fresh_store(tmp, "power" + label)
    c = _client(uri)
    rid = c.create_run(c.create_experiment("p")).info.run_id
    sink = Sink(c, rid, tmp / f"spool-power{label}", uri)
    lp = ListenerProc("smi", sink, 0.1, ["0"], os.getpid(), tmp, dict(os.environ))
    lp.start()
    lp.wait_ready(time.monotonic() + 30)
    buf: list[tuple[float, float]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_driver_power_samples, args=(stop, buf), daemon=True)
    reader.start()
    time.sleep(seconds)
    lp.stop()
    stop.set()
    reader.join(timeout=10)
    frame: pd.DataFrame = read_spool(sink.dir / "smi.jsonl")
    sink.close()
    power_key = next(k for k in ("smi/gpu0/power_instant_w", "smi/gpu0/power_w") if k in frame)
    p = frame[power_key].to_numpy(dtype=float)
    t = frame["time"].to_numpy()
    ok = ~np.isnan(p)
    changes = int(np.count_nonzero(np.diff(p[ok])))
    out = {"samples": len(frame), "seconds": float(t[-1] - t[0]), "power_key": power_key,
           "power_changes_per_s": changes / float(t[-1] - t[0])}
    if "smi/gpu0/energy_j" in frame:
        # compare over the same window: the counter is read only now and then
        has_e = frame["smi/gpu0/energy_j"].notna().to_numpy()
        t_e = t[has_e]
        window = (t >= t_e[0]) & (t <= t_e[-1])
        e_counter = counter_delta(frame["smi/gpu0/energy_j"].to_numpy())
        e_power = integrate(t[window], p[window])
        out["energy_window_s"] = float(t_e[-1] - t_e[0])
        out.update({"energy_counter_j": e_counter, "energy_integrated_j": e_power,
                    "energy_rel_diff": abs(e_counter - e_power) / e_counter if e_counter else float("nan")})
        if "smi/gpu0/power_avg_w" in frame:
            e_avg = integrate(t[window], frame["smi/gpu0/power_avg_w"].to_numpy(dtype=float)[window])
            out["energy_from_power_avg_rel_diff"] = abs(e_counter - e_avg) / e_counter
        if len(buf) > 2:
            bt = np.array([b[0] for b in buf])
            bv = np.array([b[1] for b in buf])
            sel = (bt >= t_e[0]) & (bt <= t_e[-1])
            e_buf = integrate(bt[sel], bv[sel])
            out["driver_buffer_samples_per_s"] = len(buf) / float(bt[-1] - bt[0])
            out["energy_from_driver_buffer_rel_diff"] = abs(e_counter - e_buf) / e_counter
    return out


def _gpu_load(steady: bool = False) -> subprocess.Popen | None:
    """A bf16 matmul load: bursts of 20 matmuls with 20 ms of sleep between (bursty), or
    back to back (steady)."""
    pause = "" if steady else "time.sleep(0.02)"
    code = ("import torch,time\n"
            "a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=a.clone()\n"
            "while True:\n"
            "    for _ in range(20): c=a@b\n"
            f"    torch.cuda.synchronize(); {pause}\n")
    try:
        import torch

        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    p = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(5)
    return p


def _table(title: str, rows: dict[str, dict[str, float]]) -> str:
    cols = sorted({k for r in rows.values() for k in r}, key=lambda k: list(next(iter(rows.values()))).index(k)
                  if k in next(iter(rows.values())) else 99)
    lines = [f"\n## {title}\n", "| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, r in rows.items():
        cells = [f"{r[c]:.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_collector":
        _collector_main(sys.argv[2], float(sys.argv[3]), Path(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--gpu-load", action="store_true")
    ap.add_argument("--power-seconds", type=float, default=20.0, help="length of each power run")
    ap.add_argument("--sections", default="sink,each,collectors,power")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="radtrack-bench-"))
    sections = a.sections.split(",")
    results: dict[str, object] = {"host": os.uname().nodename, "cpus": os.cpu_count(),
                                  "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        import mlflow

        results["mlflow"] = mlflow.__version__
        if "sink" in sections:
            results["sink"] = bench_sink(tmp)
            print(_table("Sink throughput into SQLite (points/s)", results["sink"]), flush=True)
        load = _gpu_load() if a.gpu_load else None
        try:
            if "costs" in sections:
                sys.path.insert(0, str(HERE.parent))
                import listener_costs as lc

                calls = {**lc.nvml_rows(100), **lc.host_rows(100)}
                results["costs"] = {"calls": calls, "idle_10hz": lc.idle_process(),
                                    "buffers": lc.sample_buffers()}
                print(_table("Driver sample buffers", results["costs"]["buffers"]), flush=True)
                print(_table("CPU per reading (us per call)", calls), flush=True)
                print(f"idle Python waking at 10 Hz: {results['costs']['idle_10hz']}", flush=True)
            if "buffers" in sections and "costs" not in sections:
                sys.path.insert(0, str(HERE.parent))
                import listener_costs as lc

                results["buffers"] = lc.sample_buffers()
                print(_table("Driver sample buffers", results["buffers"]), flush=True)
            if "profile" in sections:
                from radtrack.listeners import registry

                text = "\n".join(profile_listener(n) for n in ("smi", "dcgm", "top")
                                  if registry.availability(n))
                (out / "listener_profiles.txt").write_text(text)
                print(text[:3000], flush=True)
            if "each" in sections:
                from radtrack.listeners import registry

                each = {f"{n} @ {a.interval}s": bench_one_listener(n, a.interval, 10)
                        for n in ("smi", "dcgm", "top", "iostat") if registry.availability(n)}
                if registry.availability("smi") and registry.availability("dcgm"):
                    # both in one shared sampler process (samples/s counts both listeners')
                    each[f"smi+dcgm shared @ {a.interval}s"] = bench_one_listener("smi+dcgm", a.interval, 10)
                results["each"] = each
                print(_table("One listener alone (steady state)", each), flush=True)
            if "collectors" in sections:
                col: dict[str, dict[str, float]] = {}
                # before/after the shared sampler, side by side: smi and dcgm in one process
                # (the launcher's default) and in separate processes
                for label, kind in (("shared sampler", "radtrack"), ("separate", "radtrack-separate")):
                    col[f"radtrack smi+dcgm+top @ {a.interval}s, {label}"] = bench_collector(
                        f"{kind}:smi+dcgm+top", a.interval, a.duration, tmp)
                    col[f"radtrack smi+top @ {a.interval}s + dcgm@1, {label}"] = bench_collector(
                        f"{kind}:smi+top+dcgm@1", a.interval, a.duration, tmp)
                col[f"radtrack smi+top @ {a.interval}s"] = bench_collector("radtrack:smi+top", a.interval, a.duration, tmp)
                col["radtrack smi+dcgm+top @ 1s"] = bench_collector("radtrack", 1.0, a.duration, tmp)
                if shutil.which("nvidia-smi"):
                    col[f"radT-style nvidia-smi + log_metrics @ {a.interval}s"] = bench_collector("radt", a.interval, a.duration, tmp)
                col["MLflow system metrics @ 1s"] = bench_collector("mlflow", 1.0, a.duration, tmp)
                results["collectors"] = col
                print(_table(f"Collectors over {a.duration:g} s (GPU load: {load is not None})", col), flush=True)
            if "power" in sections and shutil.which("nvidia-smi"):
                results["power"] = bench_power(tmp, a.power_seconds)
                rows = {"bursty load": results["power"]}
                if load is not None:  # the same with a steady load
                    load.terminate()
                    load.wait()
                    load = _gpu_load(steady=True)
                    results["power_steady"] = rows["steady load"] = bench_power(tmp, a.power_seconds, "steady")
                print(_table("Power capture at 0.1 s", rows), flush=True)
        finally:
            if load is not None:
                load.terminate()
                load.wait()
    finally:
        (out / "listeners.json").write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
