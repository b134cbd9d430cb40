"""Where a radtrack launch spends its wall time: a stack sampler over every launcher thread.

    python benchmarks/phase_profile.py OUT.json [--hz 200] -- <radtrack arguments>

Runs ``python -m radtrack <arguments>`` in this process with a daemon thread that takes every
thread's stack (sys._current_frames) at ``--hz`` and keeps, per sample, the time, the
thread's name, its innermost radtrack frame and its innermost frame of any file. At exit it
writes the samples and a summary of the wall time per (thread, radtrack function) in
windows given by marker lines the tracked script prints (``START <epoch>`` / ``END
<epoch>``, as benchmarks/fixed_cost.py's script does): before the script, during it, after
it. A measuring aid for issue 25's fixed cost, not part of the product.
"""

from __future__ import annotations

import argparse
import atexit
import json
import runpy
import sys
import threading
import time
from collections import Counter
from pathlib import Path

SAMPLES: list[tuple[float, str, str, str]] = []


def _where(frame, root: str) -> tuple[str, str]:
    inner_any = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
    inner_rt = "-"
    f = frame
    while f is not None:
        if root in f.f_code.co_filename and "phase_profile" not in f.f_code.co_filename:
            inner_rt = f"{Path(f.f_code.co_filename).stem}.{f.f_code.co_name}"
            break
        f = f.f_back
    return inner_rt, inner_any


def _sampler(hz: float, stop: threading.Event, root: str) -> None:
    me = threading.get_ident()
    names = {}
    while not stop.wait(1.0 / hz):
        now = time.time()
        for t in threading.enumerate():
            names[t.ident] = t.name
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            rt, anyf = _where(frame, root)
            SAMPLES.append((now, names.get(ident, str(ident)), rt, anyf))


def _markers(path: Path | None) -> dict[str, float]:
    out: dict[str, float] = {}
    if path is None or not path.exists():
        return out
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("START", "END"):
            out.setdefault(parts[0], float(parts[1]))
    return out


def _summary(t0: float, marks: dict[str, float]) -> dict[str, object]:
    start, end = marks.get("START", float("inf")), marks.get("END", float("inf"))
    phases: dict[str, Counter] = {"before": Counter(), "during": Counter(), "after": Counter()}
    for t, thread, rt, anyf in SAMPLES:
        phase = "before" if t < start else "during" if t < end else "after"
        if rt == "-" and anyf.startswith(("threading.py:", "selectors.py:")):
            continue
        phases[phase][f"{thread} | {rt} | {anyf}"] += 1
    period = (SAMPLES[1][0] - SAMPLES[0][0]) if len(SAMPLES) > 1 else 0.0
    return {"t0": t0, "markers": marks, "end": time.time(),
            "phases": {k: [(key, n) for key, n in v.most_common(40)] for k, v in phases.items()},
            "approx_sample_period_s": period}


def main() -> None:
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--hz", type=float, default=200.0)
    ap.add_argument("--markers", type=Path, help="file the tracked script writes START/END lines to")
    a = ap.parse_args(argv[:split])
    t0 = time.time()
    stop = threading.Event()
    root = str(Path(__file__).resolve().parents[1] / "radtrack")
    threading.Thread(target=_sampler, args=(a.hz, stop, root), daemon=True, name="sampler").start()

    def dump() -> None:
        stop.set()
        Path(a.out).write_text(json.dumps(_summary(t0, _markers(a.markers)), indent=1))

    atexit.register(dump)
    sys.argv = ["radtrack", *argv[split + 1:]]
    runpy.run_module("radtrack", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
