"""Run listeners in this process and write their messages, one line each, to a stream.

Messages are ``Hello`` (what a listener emits, with units; again, whole, when
:meth:`Listener.grown` says its metrics grew), ``Sample``, ``Samples`` (the
readings a source stamps itself, one columnar line per read: smi's driver power buffer)
and ``Error`` (then exit code 1), written through radtrack/listeners/protocol.py's one encoder; the
stream is flushed at most once a second (FLUSH_EVERY_S), and at once for hellos, errors,
first and final readings. Sampling follows monotonic deadlines (start + k * interval), so
the rate never drifts; a deadline missed by more than one interval is skipped and
counted, not bunched. At a clean stop each listener's ``Stats`` (CPU seconds of its
readings and lines, samples, missed deadlines) goes to stderr, where the launcher reads it
to share a shared sampler's CPU among its listeners (radtrack/run/listen.py).

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

from radtrack.listeners.base import Listener, ListenerConfig, MetricSpec, TimedSample
from radtrack.listeners.protocol import Error, Hello, Sample, Stats, batch, canonical, encode
from radtrack.listeners.registry import get
from radtrack.listeners.wrappers import CommandWrapper
from radtrack.vocab.schema import listener_tag

# deadlines of listeners sharing a sampler that fall this close together are one wake-up
# (0.1 * 30 and 1.0 * 3 differ in the last bit)
_SAME_WAKEUP_S = 1e-3
# Lines go to the launcher at most this often (a hello, an error, each listener's first
# reading and the final one at once): every write wakes the launcher's reader thread, about
# 50 us of its CPU on a 2-core VM whatever the line holds, so a 10 Hz listener flushing every
# wake-up cost 0.05 % of a core in the launcher alone. The sink ships every 2 s anyway; a
# listener killed by SIGKILL loses at most this much of its readings (a Python error still
# writes them); the driver's power samples are never lost (a restart re-reads the ring from
# the last position the launcher saw). RADTRACK_LISTENER_FLUSH_S overrides (0: every wake-up).
FLUSH_EVERY_S = 1.0
FLUSH_ENV = "RADTRACK_LISTENER_FLUSH_S"


def flush_every_s() -> float:
    """Seconds between flushes of the sample stream (FLUSH_EVERY_S unless the environment
    sets one; a value that is no number >= 0 is ignored)."""
    try:
        value = float(os.environ.get(FLUSH_ENV, FLUSH_EVERY_S))
    except ValueError:
        return FLUSH_EVERY_S
    return value if value >= 0 else FLUSH_EVERY_S


def _clean(values: dict[str, float], keys: set[str]) -> dict[str, float]:
    """The probed keys' finite values, as floats."""
    return {key: float(v) for key, v in values.items()
            if key in keys and v is not None and isfinite(v)}


def _line(t: float, values: dict[str, float], keys: set[str],
          resume: dict[str, int] | None = None, listener: str | None = None) -> str:
    return encode(Sample(t, _clean(values, keys), resume, listener)) + "\n"


def _batches(timed: list[TimedSample], keys: set[str], listener: str | None) -> list[str]:
    """Source-stamped samples as columnar lines: one per run of samples with the same keys
    (smi: one per GPU per read), each carrying the restart positions of its samples."""
    out: list[str] = []
    run: list[tuple[float, dict[str, float]]] = []
    resume: dict[str, int] = {}
    for i, ts in enumerate(timed):
        values = _clean(ts.values, keys)
        run.append((ts.t, values))
        if ts.resume:
            resume.update(ts.resume)
        nxt = timed[i + 1] if i + 1 < len(timed) else None
        if nxt is None or nxt.values.keys() != ts.values.keys():
            out.append(encode(batch(run, resume or None, listener)) + "\n")
            run, resume = [], {}
    return out


class _Lines:
    """The sample stream's lines, held until :meth:`flush` writes them in one write: the
    pace of writes is the runner's, whatever buffering ``out`` has (PYTHONUNBUFFERED, -u)."""

    def __init__(self, out: TextIO):
        self.out = out
        self.held: list[str] = []

    def write(self, text: str) -> None:
        self.held.append(text)

    def flush(self) -> None:
        if self.held:
            text, self.held = "".join(self.held), []
            self.out.write(text)
        self.out.flush()


class _Wake(Exception):
    """A stop signal ending :meth:`_Stop.sleep` (Python resumes an interrupted sleep)."""


class _Stop:
    """SIGTERM/SIGINT: stop after this reading, or at once while waiting for the next one
    (the launcher waits for a listener's final reading before a run's end is durable)."""

    def __init__(self) -> None:
        self.requested = False
        self.sleeping = False

    def __call__(self, *_: object) -> None:
        self.requested = True
        if self.sleeping:
            self.sleeping = False
            raise _Wake

    def sleep(self, seconds: float) -> None:
        """``time.sleep`` that a stop signal ends at once (PEP 475 would finish it)."""
        try:
            self.sleeping = not self.requested
            if self.sleeping:
                time.sleep(seconds)
            self.sleeping = False
        except _Wake:
            pass


@dataclass
class _Member:
    """One listener in the sampling loop."""

    name: str
    config: ListenerConfig
    listener: Listener | CommandWrapper | None = None  # a wrapper only says hello and waits
    keys: set[str] = field(default_factory=set)
    k: int = 0  # index of its next deadline
    emitted: int = 0
    missed: int = 0  # deadlines skipped because it fell behind
    cpu_s: float = 0.0  # this thread's CPU time in its readings and lines

    def deadline(self, start: float) -> float:
        return start + self.k * self.config.interval


def _error(out: TextIO | _Lines, exc: BaseException, listener: str | None = None) -> None:
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


def _run(members: list[_Member], stream: TextIO, count: int | None, shared: bool) -> int:
    out = _Lines(stream)
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sampler = f"shared: {'+'.join(m.name for m in members)} (pid {os.getpid()})"

    def label(m: _Member) -> str | None:  # lines of a shared sampler name their listener
        return m.name if shared else None

    try:
        active: list[_Member] = []
        for m in members:
            try:
                _probe(m, out, shared, sampler)
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
        if any(isinstance(m.listener, CommandWrapper) for m in active):  # never shared
            while not stop.requested:
                time.sleep(0.1)
            return 0

        def emit(m: _Member, final: bool = False) -> bool:
            """One reading of ``m`` written; False when it failed (then it is dropped)."""
            assert isinstance(m.listener, Listener)
            c0 = time.thread_time()
            try:
                values = m.listener.final_sample() if final else m.listener.sample()
                grown = m.listener.grown()
                if grown is not None:  # new metrics (a GPU smi follows): a new hello first
                    _hello(m, grown, out, shared, sampler)
                regular = _line(time.time(), values, m.keys, listener=label(m))
                timed = m.listener.timed_samples()
                if timed:
                    # the source-stamped samples as columnar lines, before the reading they
                    # predate (each key's points arrive in time order); the restart position
                    # rides on the line that completes it, so a crash repeats or loses nothing
                    out.held += _batches(timed, m.keys, label(m))
                out.held.append(regular)
                m.cpu_s += time.thread_time() - c0
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
        flush_s, flushed = flush_every_s(), start
        while not stop.requested and active:
            wake = min(m.deadline(start) for m in active)
            delay = wake - time.monotonic()
            if delay > 0:
                stop.sleep(delay)
                if stop.requested:
                    break
            now = time.monotonic()
            first = False
            for m in list(active):
                late = now - m.deadline(start)
                if late < -_SAME_WAKEUP_S:
                    continue  # not due at this wake-up
                if late > m.config.interval:  # fell behind: skip the missed deadlines
                    skipped = math.floor(late / m.config.interval)
                    m.k += skipped
                    m.missed += skipped
                ok = emit(m)
                m.emitted += 1
                first = first or m.emitted == 1
                m.k += 1
                if not ok or (count is not None and m.emitted >= count):
                    active.remove(m)
            if first or now - flushed >= flush_s - _SAME_WAKEUP_S:
                out.flush()
                flushed = now
            if not any(m.listener is not None for m in members):
                return 1  # every listener of a shared sampler failed
        if stop.requested:
            # one last reading at the stop, with everything a listener reads only now and
            # then (smi's energy counter), so totals cover the run up to its end
            for m in active:
                emit(m, final=True)
            out.flush()
            _stats(members)
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


def _stats(members: list[_Member]) -> None:
    """Each listener's Stats line on stderr (the launcher reads it after the exit)."""
    try:
        sys.stderr.write("".join(encode(Stats(m.name, round(m.cpu_s, 6), m.emitted, m.missed)) + "\n"
                                 for m in members))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _probe(m: _Member, out: TextIO | _Lines, shared: bool, sampler: str) -> None:
    cls = get(m.name)
    why = cls.available()
    if not why:
        raise RuntimeError(f"{m.name} unavailable: {why.reason}")
    m.listener = cls(m.config)
    _hello(m, m.listener.probe() if isinstance(m.listener, Listener) else [], out, shared, sampler)


def _hello(m: _Member, specs: list[MetricSpec], out: TextIO | _Lines, shared: bool,
           sampler: str) -> None:
    """``m``'s hello: its metrics (the keys its lines may carry from now on) and tags."""
    assert m.listener is not None
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
    if isinstance(listener, Listener):
        listener.close()
