"""Run listeners in this process and write their messages, one line each, to a stream.

Messages are ``Hello`` (what a listener emits, with units), ``Sample`` and ``Error`` (then
exit code 1), written through listeners/protocol.py's one encoder. Sampling follows
monotonic deadlines (start + k * interval), so the rate never drifts; a deadline missed
by more than one interval is skipped and counted, not bunched.

A shared sampler (:func:`run_shared`, ``python -m radtrack.listeners smi+dcgm@1``) runs
several listeners in one process: one import of their libraries, one NVML session, one
wake-up schedule (each listener keeps its own deadlines; the process sleeps to the
earliest). Every line then names its listener, each listener sends its own hello, and
one that fails is reported by an error line naming it and dropped while the others go
on; the process exits 1 only when none is left.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from math import isfinite
from typing import TextIO

from radtrack.listeners.base import Listener, ListenerConfig
from radtrack.listeners.protocol import Error, Hello, Sample, canonical, encode
from radtrack.listeners.registry import get
from radtrack.store.schema import listener_tag

# deadlines of listeners sharing a sampler that fall this close together are one wake-up
# (0.1 * 30 and 1.0 * 3 differ in the last bit)
_SAME_WAKEUP_S = 1e-3


def _line(t: float, values: dict[str, float], keys: set[str],
          resume: dict[str, int] | None = None, listener: str | None = None) -> str:
    clean = {key: float(v) for key, v in values.items()
             if key in keys and v is not None and isfinite(v)}
    return encode(Sample(t, clean, resume, listener)) + "\n"


class _Stop:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self, *_: object) -> None:
        self.requested = True


@dataclass
class _Member:
    """One listener in the sampling loop."""

    name: str
    config: ListenerConfig
    listener: Listener | None = None
    keys: set[str] = field(default_factory=set)
    k: int = 0  # index of its next deadline
    emitted: int = 0

    def deadline(self, start: float) -> float:
        return start + self.k * self.config.interval


def _error(out: TextIO, exc: BaseException, listener: str | None = None) -> None:
    try:
        out.write(encode(Error(f"{type(exc).__name__}: {exc}", listener)) + "\n")
        out.flush()
    except BrokenPipeError:
        pass


def run(name: str, config: ListenerConfig, out: TextIO = sys.stdout, count: int | None = None) -> int:
    """Sample listener ``name`` until SIGTERM/SIGINT (or ``count`` samples); return an exit code."""
    return _run([_Member(name, config)], out, count, shared=False)


def run_shared(members: list[tuple[str, ListenerConfig]], out: TextIO = sys.stdout,
               count: int | None = None) -> int:
    """Sample several listeners in this one process (a shared sampler), each with its own
    config (interval, resume positions); ``count`` samples each at most."""
    names = [canonical(n) for n, _ in members]
    if len(set(names)) != len(names):
        _error(out, ValueError(f"a listener is named twice in {'+'.join(names)}"))
        return 1
    return _run([_Member(n, cfg) for n, (_, cfg) in zip(names, members, strict=True)],
                out, count, shared=True)


def _run(members: list[_Member], out: TextIO, count: int | None, shared: bool) -> int:
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sharing = "+".join(m.name for m in members)

    def label(m: _Member) -> str | None:  # lines of a shared sampler name their listener
        return m.name if shared else None

    try:
        active: list[_Member] = []
        for m in members:
            try:
                _probe(m, out, shared, f"shared: {sharing} (pid {os.getpid()})")
            except BrokenPipeError:
                raise
            except Exception as exc:
                if not shared:
                    raise
                _error(out, exc, m.name)  # the others still run
                _close(m)
                continue
            active.append(m)
        if not active:
            return 1
        if any(type(m.listener).wraps_command for m in active):  # profilers: never shared
            while not stop.requested:
                time.sleep(0.1)
            return 0

        def emit(m: _Member, final: bool = False) -> bool:
            """One reading of ``m`` written; False when it failed (then it is dropped)."""
            assert m.listener is not None
            try:
                values = m.listener.final_sample() if final else m.listener.sample()
                out.write(_line(time.time(), values, m.keys, listener=label(m)))
                for ts in m.listener.timed_samples():
                    # one line per source-stamped sample; the restart position rides on the
                    # line that completes it, so a crash between lines repeats or loses nothing
                    out.write(_line(ts.t, ts.values, m.keys, ts.resume, label(m)))
            except BrokenPipeError:
                raise
            except Exception as exc:
                if not shared:
                    raise
                _error(out, exc, m.name)
                _close(m)
                return False
            return True

        start = time.monotonic()
        while not stop.requested and active:
            wake = min(m.deadline(start) for m in active)
            delay = wake - time.monotonic()
            if delay > 0:
                time.sleep(delay)
                if stop.requested:
                    break
            now = time.monotonic()
            for m in list(active):
                late = now - m.deadline(start)
                if late < -_SAME_WAKEUP_S:
                    continue  # not due at this wake-up
                if late > m.config.interval:  # fell behind: skip the missed deadlines
                    m.k += math.floor(late / m.config.interval)
                ok = emit(m)
                m.emitted += 1
                m.k += 1
                if not ok or (count is not None and m.emitted >= count):
                    active.remove(m)
            out.flush()
            if not any(m.listener is not None for m in members):
                return 1  # every listener of a shared sampler failed
        if stop.requested:
            # one last reading at the stop, with everything a listener reads only now and
            # then (smi's energy counter), so totals cover the run up to its end
            for m in active:
                emit(m, final=True)
            out.flush()
        return 0
    except BrokenPipeError:
        return 0
    except Exception as exc:
        _error(out, exc)
        return 1
    finally:
        for m in members:
            _close(m)


def _probe(m: _Member, out: TextIO, shared: bool, sampler: str) -> None:
    cls = get(m.name)
    why = cls.available()
    if not why:
        raise RuntimeError(f"{m.name} unavailable: {why.reason}")
    m.listener = cls(m.config)
    specs = m.listener.probe()
    m.keys = {s.key for s in specs}
    tags = m.listener.tags()
    if shared:
        # how a user tells the listeners shared one process: the same tag value on each
        tags[listener_tag(canonical(m.name), "sampler")] = sampler
    hello = Hello(m.name, [asdict(s) for s in specs], tags, m.config.interval,
                  os.getpid() if shared else None)
    out.write(encode(hello) + "\n")
    out.flush()


def _close(m: _Member) -> None:
    listener, m.listener = m.listener, None
    if listener is not None:
        listener.close()
