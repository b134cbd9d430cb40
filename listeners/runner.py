"""Run one listener in this process and write JSON-lines to a stream.

Protocol (one JSON object a line):
  {"type": "hello", "listener": NAME, "metrics": [{key, unit, description, source}], "tags": {...}}
  {"type": "sample", "t": UNIX_SECONDS, "v": {KEY: VALUE, ...}}
  {"type": "error", "message": TEXT}            (then exit code 1)
Sampling follows monotonic deadlines (start + k * interval), so the rate never drifts;
a deadline missed by more than one interval is skipped and counted, not bunched.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import time
from dataclasses import asdict
from typing import TextIO

from radtrack.listeners.base import Listener, ListenerConfig
from radtrack.listeners.registry import get


def _line(t: float, values: dict[str, float], keys: set[str],
          resume: dict[str, int] | None = None) -> str:
    clean = {key: float(v) for key, v in values.items()
             if key in keys and v is not None and math.isfinite(v)}
    msg: dict[str, object] = {"type": "sample", "t": t, "v": clean}
    if resume:
        msg["resume"] = resume
    return json.dumps(msg) + "\n"


class _Stop:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self, *_: object) -> None:
        self.requested = True


def run(name: str, config: ListenerConfig, out: TextIO = sys.stdout, count: int | None = None) -> int:
    """Sample listener ``name`` until SIGTERM/SIGINT (or ``count`` samples); return an exit code."""
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    listener: Listener | None = None
    try:
        cls = get(name)
        why = cls.available()
        if not why:
            raise RuntimeError(f"{name} unavailable: {why.reason}")
        listener = cls(config)
        specs = listener.probe()
        keys = {s.key for s in specs}
        hello = {"type": "hello", "listener": name, "metrics": [asdict(s) for s in specs],
                 "tags": listener.tags(), "interval": config.interval}
        out.write(json.dumps(hello) + "\n")
        out.flush()
        if cls.wraps_command:
            while not stop.requested:
                time.sleep(0.1)
            return 0
        start = time.monotonic()
        k = 0
        emitted = 0
        def emit(values: dict[str, float]) -> None:
            out.write(_line(time.time(), values, keys))
            for ts in listener.timed_samples():
                # one line per source-stamped sample; the restart position rides on the
                # line that completes it, so a crash between lines repeats or loses nothing
                out.write(_line(ts.t, ts.values, keys, ts.resume))
            out.flush()

        while not stop.requested and (count is None or emitted < count):
            deadline = start + k * config.interval
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
                if stop.requested:
                    break
            elif -delay > config.interval:  # fell behind: skip the missed deadlines
                k += math.floor(-delay / config.interval)
            emit(listener.sample())
            emitted += 1
            k += 1
        if stop.requested:
            # one last reading at the stop, with everything a listener reads only now and
            # then (smi's energy counter), so totals cover the run up to its end
            emit(listener.final_sample())
        return 0
    except BrokenPipeError:
        return 0
    except Exception as exc:
        try:
            out.write(json.dumps({"type": "error", "message": f"{type(exc).__name__}: {exc}"}) + "\n")
            out.flush()
        except BrokenPipeError:
            pass
        return 1
    finally:
        if listener is not None:
            listener.close()
