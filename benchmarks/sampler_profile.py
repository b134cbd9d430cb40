"""Where a shared sampler's CPU goes, call by call, while it runs as in a run (issue 25).

  python benchmarks/sampler_profile.py --json FILE [--set smi+top+dcgm@1] [--seconds 20]
      [--interval 0.1] [--gpu-load] [--root self|load]

Runs the real sampling loop (radtrack/listeners/runner.py ``run_shared``) in this process for
``--seconds`` (SIGTERM to itself ends it, as the launcher stops a listener), its lines
written to /dev/null, with every ``pynvml.nvml*`` function, the /proc readers of
radtrack/listeners/procfs.py, psutil's temperature walk, each listener's ``sample`` and the line
encoders wrapped by a timer of this thread's CPU clock. Reports, in ms of CPU per second
of wall time (10 ms/s = 1 % of a core), each wrapped call's inclusive time and count, the
loop's whole CPU, and what is left outside NVML and /proc (Python's share). The wrappers
cost about a microsecond a call, counted in the whole but in no single row.
``--root load`` watches the GPU load's process tree (a PyTorch process and its threads),
``self`` this process.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

_cpu: dict[str, float] = defaultdict(float)
_calls: dict[str, int] = defaultdict(int)


def _timed(label: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _cpu[label] += time.thread_time() - c0
            _calls[label] += 1
    return wrapper


def instrument() -> None:
    """Wrap what a sampler calls (before the listeners are built)."""
    import psutil

    from radtrack.listeners import procfs, runner
    try:
        import pynvml
    except ImportError:
        pynvml = None
    if pynvml is not None:
        for name in dir(pynvml):
            fn = getattr(pynvml, name)
            if name.startswith("nvml") and callable(fn) and name not in ("nvmlInit", "nvmlShutdown"):
                setattr(pynvml, name, _timed(f"nvml {name}", fn))
    for name in ("cpu_times", "memory", "proc_stat", "proc_ctx_switches", "proc_io", "descendants"):
        setattr(procfs, name, _timed(f"proc {name}", getattr(procfs, name)))
    psutil.sensors_temperatures = _timed("psutil sensors_temperatures", psutil.sensors_temperatures)
    runner._line = _timed("line encode (a reading)", runner._line)
    runner._batches = _timed("line encode (batches)", runner._batches)
    from radtrack.listeners.registry import get
    for lname in ("smi", "top", "dcgm", "iostat"):
        try:
            cls = get(lname)
        except Exception:
            continue
        for meth in ("sample", "timed_samples"):
            if meth in cls.__dict__:
                setattr(cls, meth, _timed(f"{lname}.{meth} (inclusive)", cls.__dict__[meth]))


def profile(spec: str, interval: float, seconds: float, root: int) -> dict[str, Any]:
    from radtrack.listeners.base import ListenerConfig
    from radtrack.listeners.protocol import parse_choices
    from radtrack.listeners.runner import run_shared

    members = [(c.name, ListenerConfig(interval=c.interval or interval, pid=root))
               for c in parse_choices(spec) or []]
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    sink = io.StringIO()
    c0, w0 = time.thread_time(), time.monotonic()
    code = run_shared(members, sink)
    loop_cpu, wall = time.thread_time() - c0, time.monotonic() - w0
    per_s = {k: 1e3 * v / wall for k, v in _cpu.items()}
    nvml = sum(v for k, v in per_s.items() if k.startswith("nvml "))
    proc = sum(v for k, v in per_s.items() if k.startswith(("proc ", "psutil ")))
    total = 1e3 * loop_cpu / wall
    return {"set": spec, "interval_s": interval, "wall_s": round(wall, 2), "exit": code,
            "lines": sink.getvalue().count("\n"), "loop_ms_per_s": total,
            "nvml_ms_per_s": nvml, "proc_ms_per_s": proc,
            "python_ms_per_s": total - nvml - proc,
            "calls": {k: {"ms_per_s": round(per_s[k], 4), "per_s": round(_calls[k] / wall, 2),
                          "us_per_call": round(1e6 * _cpu[k] / _calls[k], 1)}
                      for k in sorted(per_s, key=per_s.get, reverse=True)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    ap.add_argument("--set", default="smi+top+dcgm@1")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--gpu-load", action="store_true", help="a bursty bf16 matmul on GPU 0 meanwhile")
    ap.add_argument("--root", choices=("self", "load"), default="load")
    a = ap.parse_args()
    load = None
    if a.gpu_load:
        from listeners import _gpu_load  # benchmarks/listeners.py

        load = _gpu_load()
    try:
        instrument()
        root = load.pid if (load is not None and a.root == "load") else os.getpid()
        result = profile(a.set, a.interval, a.seconds, root)
    finally:
        if load is not None:
            load.kill()
    result["gpu_load"] = load is not None
    Path(a.json).write_text(json.dumps(result, indent=1))
    print(f"{a.set} @ {a.interval} s: loop {result['loop_ms_per_s']:.2f} ms/s (NVML "
          f"{result['nvml_ms_per_s']:.2f}, /proc {result['proc_ms_per_s']:.2f}, rest "
          f"{result['python_ms_per_s']:.2f}), {result['lines']} lines")
    for k, v in list(result["calls"].items())[:25]:
        print(f"  {v['ms_per_s']:8.3f} ms/s  {v['per_s']:7.2f}/s  {v['us_per_call']:9.1f} us  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
