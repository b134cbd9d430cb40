"""Monitoring overhead inside one run: listeners paused and running in alternating phases.

Between-run comparisons (benchmarks/overhead.py) cannot resolve 0.5 %: the step time of
one run differs from the next by +-1.7 % (heavy) to +-15 % (light). Here the workload runs
once under ``radtrack -l LISTENERS --interval S`` while this controller alternates phases
of a few seconds (``--phase-s``) in which the run's listener processes are paused
(SIGSTOP: "off") or running (SIGCONT: "on"). Phases come in pairs, one "on" and one "off"
in random order per pair (``--seed``), so a drift of the machine hits both sides of a pair
alike. The workload (this file's ``workload`` subcommand, which radtrack runs) writes the
``time.monotonic()`` of the end of every step to a file, so no store read is needed; step
``i`` lasts from the end of step ``i-1`` to its own end. A step belongs to a phase when it
lies entirely inside it, and the first such step after every switch is dropped (the
listeners' wake-up after SIGCONT, a pipeline refilling after a pause). Each phase gives
its mean step time; each pair the log of its on/off ratio; the result is the geometric
mean of the pairs' ratios with a 95 % interval from Student's t over the pairs (and a
bootstrap percentile interval beside it), several runs pooled pair by pair.

Listener processes are found as the launcher's descendants whose command line runs
``radtrack.listeners``; each runs in its own session, so its whole process group (e.g. a
``dcgmi`` child) is stopped and continued. ``--arms`` measures several listener subsets in
one run: each pair then runs one arm's listeners in its "on" phase (every other listener
stays paused throughout) against none in its "off" phase; arms other than ``all`` set
``RADTRACK_SHARED_SAMPLER=0`` so every listener has its own process. Profilers (``-l
ncu``/``nsys``) wrap the workload instead of running beside it, so for them the phases
switch the NVTX range ``profile`` (RADTRACK_PROFILE_NVTX_RANGE) inside the workload: "on"
measures the profiled range against the unprofiled one, not against a bare run.

Every paused process is continued when the controller leaves, by ``finally``, by its
SIGINT/SIGTERM/SIGHUP handler, and by a guardian process that continues every process it
was told about as soon as the controller's pipe closes (even after SIGKILL).

    python benchmarks/overhead_ab.py --workload cpu -l top --interval 0.1 --pairs 4 --phase-s 1 --out /tmp/ab.json
    python benchmarks/overhead_ab.py --workload heavy -l smi+dcgm+top+iostat --interval 0.1 \\
        --arms smi,dcgm,top,iostat,all --pairs 30 --out ab.json
    python benchmarks/overhead_ab.py --report --out ab.json
"""

from __future__ import annotations

import argparse
import array
import bisect
import contextlib
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead_stats import t975  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROFILERS = ("nsys", "ncu")
TARGET_PCT = 0.5  # issue 25: |mean| < 0.5 % and a 95 % half-width <= 0.5 %
WORKLOADS = ("cpu", "light", "heavy")
FLUSH_S = 1.0  # the workload appends its step times to the file this often
POLL_S = 0.1  # and looks for the stop file this often

# ---------------------------------------------------------------------------------------
# The workload (runs under radtrack: ``radtrack ... overhead_ab.py workload ...``)
# ---------------------------------------------------------------------------------------


def _cpu_step(n: int) -> None:
    s = 0
    for i in range(n):
        s += i * i
    if s < 0:  # never: keeps the loop from being optimised away by anything clever
        print(s)


def _make_step(kind: str, smoke: bool):
    """(step, warm-up steps, a description); step() does one step and waits for it."""
    if kind == "cpu":
        n = 20_000  # about 1 ms of pure Python on a current core
        return (lambda: _cpu_step(n)), 20, f"cpu: sum of squares over {n} ints"
    sys.path.insert(0, str(ROOT / "workloads"))
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "heavy":  # workloads/resnet.py --dtype bf16 (batch 128, 224 px)
        from resnet import ResNet
        from torch import nn

        batch, size = (2, 32) if smoke or device.type == "cpu" else (128, 224)
        fmt = torch.channels_last if device.type == "cuda" else torch.contiguous_format
        with device:
            model = ResNet().to(memory_format=fmt)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_fn = nn.CrossEntropyLoss()
        images = torch.randn(batch, 3, size, size, device=device).to(memory_format=fmt)
        labels = torch.randint(0, 1000, (batch,), device=device)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = loss_fn(model(images), labels)
            loss.backward()
            opt.step()
            if device.type == "cuda":  # the step's end is when the GPU finished it
                torch.cuda.synchronize(device)

        return step, 10, f"heavy: ResNet-50 bf16 batch {batch} {size}px on {device}"
    # light: workloads/cifar_cnn.py (tutorial CNN, batch 4, 2 DataLoader workers)
    from cifar_cnn import SyntheticCifar, TutorialNet
    from torch.nn import functional as F
    from torch.utils.data import DataLoader

    dataset = SyntheticCifar(2_000_000, 0)  # one epoch outlasts any run: no epoch seams
    loader = DataLoader(dataset, batch_size=4, shuffle=True, drop_last=True, num_workers=2,
                        pin_memory=device.type == "cuda", persistent_workers=True)
    model = TutorialNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    batches = iter(loader)

    def step() -> None:  # as the tutorial: no wait on the GPU, the CPU is the bottleneck
        images, labels = next(batches)
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        opt.step()

    return step, 50, f"light: CIFAR tutorial CNN batch 4, 2 workers, on {device}"


def workload_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="overhead_ab.py workload")
    p.add_argument("--kind", choices=WORKLOADS, required=True)
    p.add_argument("--steps-file", type=Path, required=True, help="float64 step end times")
    p.add_argument("--stop-file", type=Path, required=True, help="stop once this exists")
    p.add_argument("--pid-file", type=Path, required=True)
    p.add_argument("--max-s", type=float, default=900.0, help="stop after this long anyway")
    p.add_argument("--log-every", type=int, default=0, help="log step_time_s every N steps")
    p.add_argument("--range-file", type=Path, default=None,
                   help="write the NVTX range's openings and closings here (JSON: [time, open])")
    p.add_argument("--smoke", action="store_true")
    a = p.parse_args(argv)
    step, warmup, what = _make_step(a.kind, a.smoke)
    nvtx = None
    want = [False]  # the profiler's NVTX range: SIGUSR1 opens it, SIGUSR2 closes it
    if a.kind != "cpu":
        import torch

        if torch.cuda.is_available():
            nvtx = torch.cuda.nvtx
    signal.signal(signal.SIGUSR1, lambda *_: want.__setitem__(0, True))
    signal.signal(signal.SIGUSR2, lambda *_: want.__setitem__(0, False))
    from radtrack import RADTBenchmark

    print(f"overhead_ab workload: {what}", flush=True)
    with RADTBenchmark() as run:
        for _ in range(warmup):
            step()
        a.pid_file.write_text(str(os.getpid()))
        ends = array.array("d")
        written = 0
        in_range = False
        switches: list[tuple[float, bool]] = []  # (monotonic time, opened) of the range
        start = last = time.monotonic()
        next_flush, next_poll = start + FLUSH_S, start + POLL_S
        with a.steps_file.open("ab") as out:
            while True:
                if want[0] != in_range:  # at a step boundary, as a profiled script would
                    if nvtx is not None:
                        (nvtx.range_push("profile") if want[0] else nvtx.range_pop())
                    in_range = want[0]
                    switches.append((time.monotonic(), in_range))
                    if a.range_file is not None:  # at once: a run cut short keeps them
                        a.range_file.write_text(json.dumps(switches))
                step()
                now = time.monotonic()
                ends.append(now)
                if a.log_every and len(ends) % a.log_every == 0:
                    run.log_metrics({"step_time_s": (now - last) / a.log_every},
                                    epoch=len(ends) // a.log_every)
                    last = now
                if now >= next_flush:
                    ends[written:].tofile(out)
                    out.flush()
                    written = len(ends)
                    next_flush = now + FLUSH_S
                if now >= next_poll:
                    next_poll = now + POLL_S
                    if a.stop_file.exists() or now - start > a.max_s:
                        break
            ends[written:].tofile(out)
        if in_range and nvtx is not None:
            nvtx.range_pop()
    print(f"overhead_ab workload: {len(ends)} steps in {ends[-1] - start:.1f} s", flush=True)
    return 0


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------


def assign_steps(ends: list[float], phases: list[dict], drop: int = 1) -> None:
    """Fill each phase's ``steps`` and ``mean_step_s`` from the step end times ``ends``.

    Step i lasts (ends[i-1], ends[i]]; it counts for a phase when it lies entirely inside
    [t0, t1]; the first ``drop`` such steps of every phase are left out."""
    j = 0
    for ph in sorted(phases, key=lambda q: q["t0"]):
        durs = []
        while j < len(ends) and ends[j] <= ph["t0"]:
            j += 1
        k = max(j, 1)  # step k starts at ends[k-1] >= t0 (step j straddles t0)
        while k < len(ends) and ends[k] <= ph["t1"]:
            if ends[k - 1] >= ph["t0"]:
                durs.append(ends[k] - ends[k - 1])
            k += 1
        kept = durs[drop:]
        ph["steps"] = len(kept)
        ph["mean_step_s"] = statistics.fmean(kept) if kept else None


def range_segments(ends: list[float], phases: list[dict],
                   switches: list[tuple[float, bool]]) -> list[dict]:
    """A profiler run's phases as its workload really ran them.

    The workload opens and closes the NVTX range at the first step boundary after each
    signal, so a profiled step that outlasts its phase (an ncu kernel replay can take a
    light step from 9 ms to 10 s) runs whole inside the range, past the phase's end. Each
    segment here spans from one switch to the next, snapped to the step end just before the
    switch (the switch follows it by microseconds), so every step lies whole in one segment;
    back-to-back phases of one state are one segment. The k-th open segment pairs with the
    k-th closed one; the closed stretch before the first phase's start is left out."""
    if not phases:
        return []
    lo, hi = phases[0]["t0"], phases[-1]["t1"]

    def snap(t: float) -> float:
        i = bisect.bisect_right(ends, t)
        return ends[i - 1] if i else t

    bounds = [(lo, False)] + [(snap(t), bool(is_open)) for t, is_open in switches if t >= lo]
    segments = []
    for (t0, is_open), nxt in zip(bounds, [*bounds[1:], None], strict=True):
        if nxt is not None:
            t1 = nxt[0]
        elif not is_open:
            t1 = hi
        else:
            continue  # the range never closed: its last step's end is unknown
        if t1 > t0:
            segments.append({"state": "on" if is_open else "off", "t0": t0, "t1": t1,
                             "config": phases[0]["config"]})
    seen = {"on": 0, "off": 0}
    for seg in segments:
        seg["pair"] = seen[seg["state"]]
        seen[seg["state"]] += 1
    return segments


def pair_log_ratios(phases: list[dict]) -> list[float]:
    """log(mean step on / mean step off) of every complete pair."""
    by_pair: dict[tuple, dict[str, float]] = {}
    for ph in phases:
        if ph.get("mean_step_s"):
            by_pair.setdefault((ph.get("run", ""), ph["pair"]), {})[ph["state"]] = ph["mean_step_s"]
    return [math.log(v["on"] / v["off"]) for v in by_pair.values() if "on" in v and "off" in v]


def summarise(logs: list[float], boot: int = 2000, seed: int = 0) -> dict:
    """The on/off ratio (geometric mean over pairs) with its 95 % interval, in %.

    ``pct``: 100 * (ratio - 1); ``lo``/``hi``: Student's t over the pairs' log ratios;
    ``half``: half the interval's width; ``boot_lo``/``boot_hi``: bootstrap percentiles."""
    n = len(logs)
    out: dict = {"pairs": n, "ratio": None, "pct": None, "lo": None, "hi": None, "half": None,
                 "boot_lo": None, "boot_hi": None, "within_target": False}
    if n == 0:
        return out
    m = statistics.fmean(logs)
    out["ratio"] = math.exp(m)
    out["pct"] = 100 * math.expm1(m)
    if n < 2:
        return out
    h = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    out["lo"], out["hi"] = 100 * math.expm1(m - h), 100 * math.expm1(m + h)
    out["half"] = (out["hi"] - out["lo"]) / 2
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(logs, k=n)) for _ in range(boot))
    out["boot_lo"] = 100 * math.expm1(means[int(0.025 * boot)])
    out["boot_hi"] = 100 * math.expm1(means[int(0.975 * boot) - 1])
    out["within_target"] = abs(out["pct"]) < TARGET_PCT and out["half"] <= TARGET_PCT
    return out


def pooled(records: list[dict]) -> list[dict]:
    """One summary per (config, workload), every run's pairs pooled."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for rec in records:
        for ph in rec.get("phases", []):
            groups.setdefault((ph["config"], rec["workload"]), []).append(
                {**ph, "run": rec["run"]})
    rows = []
    for (config, workload), phases in groups.items():
        s = summarise(pair_log_ratios(phases))
        runs = len({ph["run"] for ph in phases})
        rows.append({"config": config, "workload": workload, "runs": runs, **s})
    return rows


def table(rows: list[dict]) -> str:
    def f(v: float | None, spec: str) -> str:
        return "n/a" if v is None else format(v, spec)

    out = ["| config | workload | runs | pairs | on/off ratio | difference [95 % CI] | "
           "CI half-width | within target? |", "|---|---|---:|---:|---:|---|---:|---|"]
    for r in sorted(rows, key=lambda r: (r["workload"], r["config"])):
        ci = f"[{f(r['lo'], '+.2f')}, {f(r['hi'], '+.2f')}]"
        out.append(f"| {r['config']} | {r['workload']} | {r['runs']} | {r['pairs']} | "
                   f"{f(r['ratio'], '.4f')} | {f(r['pct'], '+.2f')} % {ci} | "
                   f"{f(r['half'], '.2f')} % | {'yes' if r['within_target'] else 'no'} |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# Pausing and resuming listener processes
# ---------------------------------------------------------------------------------------

GUARDIAN = r"""
import os, signal, sys
pids = set()
for line in sys.stdin:
    try:
        pids.add(int(line))
    except ValueError:
        pass
for pid in pids:
    try:
        os.killpg(pid, signal.SIGCONT)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
"""


def listener_procs(root: int) -> dict[int, list[str]]:
    """pid -> listener names of every ``python -m radtrack.listeners`` under ``root``."""
    try:
        procs = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return {}
    found = {}
    for p in procs:
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if "radtrack.listeners" in cmd:
            i = cmd.index("radtrack.listeners")
            spec = cmd[i + 1] if i + 1 < len(cmd) else ""
            found[p.pid] = [part.split("@")[0] for part in spec.split("+") if part]
    return found


class Pauser:
    """SIGSTOP/SIGCONT of listener processes (their process group when they lead one);
    remembers every process it ever stopped and continues them all in :meth:`resume_all`.
    A guardian process continues them too if this process dies without doing so."""

    def __init__(self) -> None:
        self.stopped: set[int] = set()
        self.guardian = subprocess.Popen([sys.executable, "-c", GUARDIAN], stdin=subprocess.PIPE,
                                         text=True, start_new_session=True)

    @staticmethod
    def _send(pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:  # its own session: the group has its children too
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)

    def pause(self, pid: int) -> None:
        if pid not in self.stopped:
            self.stopped.add(pid)
            assert self.guardian.stdin is not None
            self.guardian.stdin.write(f"{pid}\n")
            self.guardian.stdin.flush()
        self._send(pid, signal.SIGSTOP)

    def resume(self, pid: int) -> None:
        self._send(pid, signal.SIGCONT)

    def resume_all(self) -> None:
        for pid in list(self.stopped):
            self.resume(pid)

    def close(self) -> None:
        self.resume_all()
        if self.guardian.stdin is not None:
            with contextlib.suppress(OSError):
                self.guardian.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.guardian.wait(5)


@contextlib.contextmanager
def resume_on_exit(pauser: Pauser) -> Iterator[None]:
    """Continue every paused listener on any exit: return, exception, SIGINT/SIGTERM/SIGHUP."""
    def handler(signum: int, _frame: object) -> None:
        pauser.resume_all()
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        pauser.close()
        for s, h in old.items():
            signal.signal(s, h)


def stopped_left(root_pids: list[int]) -> list[int]:
    """pids among ``root_pids`` and their descendants still stopped (state T)."""
    left = []
    for pid in root_pids:
        try:
            p = psutil.Process(pid)
            for q in [p, *p.children(recursive=True)]:
                if q.status() == psutil.STATUS_STOPPED:
                    left.append(q.pid)
        except psutil.Error:
            continue
    return left


# ---------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------


def profiled_kernels(log: str) -> dict:
    """What ncu's log says it profiled: kernels (``==PROF== Profiling "name" - N: ... - P
    passes``) and replay passes per kernel (min, max)."""
    passes = [int(m) for m in re.findall(r"==PROF== Profiling .* - (\d+) passes", log)]
    return {"kernels": len(passes), "passes_min": min(passes, default=None),
            "passes_max": max(passes, default=None)}


def arm_label(arm: str, listeners: str, interval: str) -> str:
    """The configuration's name in the tables: ``smi@0.1``, ``smi+top@0.1`` (all of -l), and
    for a profiler ``ncu range`` (its phases switch the NVTX range; no sampling interval)."""
    if arm == "nvtx":
        return f"{listeners} range"
    if arm == "all":
        return f"{listeners}@{interval}"
    return f"{arm}@{interval}"


def run_one(a: argparse.Namespace, run_no: int, work: Path) -> dict:
    """One radtrack run with its A/B phases; returns its record (phases filled in)."""
    folder = work / f"run-{run_no}-{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    steps, stop, pidf = folder / "steps.f64", folder / "stop", folder / "workload.pid"
    profiler = a.listeners in PROFILERS
    arms = ["nvtx"] if profiler else a.arms.split(",")
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "NO_COLOR": "1",
           "PYTHONUNBUFFERED": "1", "RADTRACK_HOME": str(folder / ".radtrack")}
    if profiler:
        env["RADTRACK_PROFILE_NVTX_RANGE"] = "profile"
    if any(arm != "all" for arm in arms) and not profiler:
        env["RADTRACK_SHARED_SAMPLER"] = "0"  # every listener in a process of its own
    argv = [sys.executable, "-m", "radtrack", "-e", "overhead-ab", "--tracking-uri",
            f"sqlite:///{folder / 'mlflow.db'}", "-l", a.listeners, "--interval", a.interval,
            str(Path(__file__).resolve()), "workload", "--kind", a.workload,
            "--steps-file", str(steps), "--stop-file", str(stop), "--pid-file", str(pidf),
            "--log-every", str(a.log_every)]
    ranges = folder / "range.json"
    if profiler:
        argv += ["--range-file", str(ranges)]
    if a.smoke:
        argv.append("--smoke")
    rng = random.Random(f"{a.seed}-{run_no}")
    rec: dict = {"run": uuid.uuid4().hex[:8], "workload": a.workload, "listeners": a.listeners,
                 "interval": a.interval, "arms": arms, "phase_s": a.phase_s, "drop": a.drop,
                 "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "phases": [], "ok": False}
    log = folder / "stdout.txt"
    pauser = Pauser()
    with log.open("w") as out, resume_on_exit(pauser):
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=folder, env=env)
        try:
            rec.update(_phases(a, proc, pauser, pidf, steps, arms, profiler, rng, rec))
        except KeyboardInterrupt as exc:  # SIGINT/SIGTERM (a time limit): keep what was measured
            rec["error"] = f"interrupted during the phases ({exc})"
        finally:
            pauser.resume_all()
            time.sleep(0.05)
            left = stopped_left([proc.pid])
            stop.touch()
            rec["stopped_left_after_phases"] = left
            try:
                proc.wait(a.max_wait_s)
            except (subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
                if isinstance(exc, KeyboardInterrupt):
                    rec["error"] = f"interrupted waiting for the run's end ({exc})"
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    rec["rc"] = proc.returncode
    ends = array.array("d")
    if steps.exists():
        with steps.open("rb") as f:
            ends.frombytes(f.read())
    rec["steps"] = len(ends)
    drop = a.drop
    if profiler:  # when the workload opened and closed the range (at step boundaries)
        rec["range_switches"] = json.loads(ranges.read_text()) if ranges.exists() else None
        rec["profiled_kernels"] = profiled_kernels(log.read_text(errors="replace"))
        if rec["range_switches"]:  # phases as the range ran them, every step whole in one
            rec["phases_signalled"] = rec["phases"]
            rec["phases"] = range_segments(list(ends), rec["phases"], rec["range_switches"])
            drop = 0  # a segment starts at the step boundary where the range switched
    assign_steps(list(ends), rec["phases"], drop)
    s = summarise(pair_log_ratios(rec["phases"]))
    rec["summary"] = s
    rec["ok"] = ("error" not in rec and rec["rc"] == 0 and s["pairs"] > 0
                 and not rec["stopped_left_after_phases"]
                 and (not profiler or bool(rec["range_switches"])))  # a range never opened measured nothing
    if not rec["ok"]:
        rec["tail"] = log.read_text(errors="replace")[-2000:]
    return rec


def _phases(a: argparse.Namespace, proc: subprocess.Popen, pauser: Pauser, pidf: Path,
            steps: Path, arms: list[str], profiler: bool, rng: random.Random, rec: dict) -> dict:
    """Wait for the steady state, then run the pairs; the phases go into ``rec`` as they end."""
    t_launch = time.monotonic()
    deadline = t_launch + a.start_timeout_s
    while not (pidf.exists() and steps.exists() and steps.stat().st_size >= 8):
        if proc.poll() is not None or time.monotonic() > deadline:
            return {"error": "the workload never reached its timed steps"}
        time.sleep(0.05)
    wpid = int(pidf.read_text())
    rec["start_s"] = time.monotonic() - t_launch
    time.sleep(a.warmup_s)
    found: dict[int, list[str]] = {}
    if not profiler:
        while True:  # the listeners: started, and past their imports
            found = listener_procs(proc.pid)
            old = [pid for pid in found if time.time() - psutil.Process(pid).create_time() > 1.0]
            if found and len(old) == len(found):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                return {"error": f"no listener processes under the launcher ({found})"}
            time.sleep(0.1)
        rec["listener_procs"] = {str(k): v for k, v in found.items()}
    names = sorted({n for v in found.values() for n in v})
    for arm in arms:
        if arm not in ("all", "nvtx") and not set(arm.split("+")) <= set(names):
            return {"error": f"arm {arm} names no running listener ({names})"}
    order = [arms[i % len(arms)] for i in range(a.pairs * len(arms))]
    for i in range(0, len(order), len(arms)):  # each round of arms in a random order
        chunk = order[i:i + len(arms)]
        rng.shuffle(chunk)
        order[i:i + len(arms)] = chunk

    def members(arm: str) -> set[int]:
        if arm == "all":
            return set(found)
        want = set(arm.split("+"))
        return {pid for pid, ns in found.items() if set(ns) & want}

    def set_state(arm: str, state: str) -> None:
        if profiler:
            with contextlib.suppress(ProcessLookupError):
                os.kill(wpid, signal.SIGUSR1 if state == "on" else signal.SIGUSR2)
            return
        on = members(arm) if state == "on" else set()
        for pid in found:
            if pid not in on:
                pauser.pause(pid)
        for pid in on:
            pauser.resume(pid)

    for pair, arm in enumerate(order):
        for state in rng.sample(["on", "off"], 2):
            if proc.poll() is not None:
                return {"error": "the run ended during the phases"}
            if not profiler:  # a restarted listener has a new pid: pick it up
                now = listener_procs(proc.pid)
                if set(now) != set(found):
                    found.clear()
                    found.update(now)
            set_state(arm, state)
            t0 = time.monotonic()
            time.sleep(a.phase_s)
            t1 = time.monotonic()
            rec["phases"].append({"pair": pair, "arm": arm, "state": state, "t0": t0, "t1": t1,
                                  "config": arm_label(arm, a.listeners, a.interval)})
    if profiler:  # close the range; listeners are continued by the caller
        with contextlib.suppress(ProcessLookupError):
            os.kill(wpid, signal.SIGUSR2)
    return {}


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["workload"]:
        return workload_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", choices=WORKLOADS, default="cpu",
                   help="cpu (tiny, for tests), light (CIFAR CNN), heavy (ResNet-50 bf16)")
    p.add_argument("-l", "--listeners", default="top",
                   help="radtrack's -l (smi+top, ...), or nsys / ncu (default: top)")
    p.add_argument("--interval", default="0.1", help="radtrack's --interval (default 0.1)")
    p.add_argument("--arms", default="all",
                   help="comma-separated listener subsets measured in one run, each against "
                        "none (e.g. smi,top,all); default all: every listener of -l")
    p.add_argument("--pairs", type=int, default=20, help="on/off pairs per arm per run")
    p.add_argument("--phase-s", type=float, default=4.0, help="seconds per phase (default 4)")
    p.add_argument("--drop", type=int, default=1, help="steps dropped after each switch")
    p.add_argument("--warmup-s", type=float, default=3.0,
                   help="steady steps before the first phase (after the workload's warm-up)")
    p.add_argument("--runs", type=int, default=1, help="runs of this configuration, pooled")
    p.add_argument("--log-every", type=int, default=0,
                   help="the workload logs step_time_s every N steps (default: never)")
    p.add_argument("--smoke", action="store_true", help="tiny model sizes (CPU checks)")
    p.add_argument("--seed", default="0")
    p.add_argument("--start-timeout-s", type=float, default=180.0)
    p.add_argument("--max-wait-s", type=float, default=120.0,
                   help="how long the run may take to end after the stop file")
    p.add_argument("--out", type=Path, required=True, help="JSON results file, appended to")
    p.add_argument("--report", action="store_true", help="only print the table of --out")
    a = p.parse_args(argv)
    records: list[dict] = json.loads(a.out.read_text()) if a.out.exists() else []
    failed = 0
    if not a.report:
        if a.pairs < 1 or a.phase_s <= 0:
            p.error("--pairs must be >= 1 and --phase-s > 0")
        if a.listeners in ("none", ""):
            p.error("-l none: there is nothing to pause")
        with tempfile.TemporaryDirectory(prefix="overhead-ab-") as tmp:
            for r in range(a.runs):
                t = time.monotonic()
                rec = run_one(a, r, Path(tmp))
                rec["wall_s"] = time.monotonic() - t
                records.append(rec)
                a.out.write_text(json.dumps(records, indent=1))
                s = rec["summary"]
                if rec["ok"]:
                    print(f"run {r + 1}/{a.runs} {a.workload} -l {a.listeners}@{a.interval}: "
                          f"{s['pairs']} pairs, {s['pct']:+.2f} % (half-width "
                          f"{s['half'] if s['half'] is not None else float('nan'):.2f} %), "
                          f"{rec['steps']} steps, {rec['wall_s']:.0f} s", flush=True)
                else:
                    failed += 1
                    print(f"run {r + 1} FAILED rc={rec['rc']} {rec.get('error', '')} "
                          f"left stopped: {rec['stopped_left_after_phases']}\n"
                          f"{rec.get('tail', '')}", file=sys.stderr, flush=True)
                    if rec.get("error", "").startswith("interrupted"):
                        break  # stopped from outside: no further runs
    rows = pooled([r for r in records if r.get("ok")])
    print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
