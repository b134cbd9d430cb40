"""Listener subprocesses of one run: start, readiness, restart with backoff, stop.

Each listener is ``python -m radtrack.listeners NAME ...`` in its own process group, so
a crash or hang never touches the workload; its JSON lines go straight into the sink.
Listeners that can share a session (smi and dcgm on NVML GPM: ``Listener.shared_sampler``)
run together in one such process, a :class:`SharedSampler`
(``python -m radtrack.listeners smi@0.1+dcgm@1``); each keeps its own
:class:`ListenerProc` here, with its own readiness, restart count and resume positions.

Every listener process is reaped with ``os.wait4`` (:class:`ListenerPopen`), so its CPU
time (rusage) is known once it ended, and its reader thread notes its own CPU time (the
launcher's intake: parsing and spooling its lines); radtrack/run/cost.py turns both,
with the listeners' own ``Stats`` lines, into a run's monitoring cost.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from radtrack.listeners.protocol import (
    Error,
    Hello,
    ListenerLaunch,
    Message,
    Sample,
    Samples,
    Stats,
    decode,
    decode_line,
)
from radtrack.run import stopping
from radtrack.run.stopping import set_parent_death_signal
from radtrack.store.sink import Sink
from radtrack.vocab.schema import listener_tag

MAX_RESTARTS = 3
READY_TIMEOUT_S = 20.0
# a listener writes a line at least every flush (runner.FLUSH_EVERY_S, 1 s) once it read:
# one silent this long (and ten of its intervals) hangs (a deadlock, a read that never
# returns, SIGSTOP): it is killed and restarted like one that died
STALL_S = 30.0
STALL_ENV = "RADTRACK_LISTENER_STALL_S"
STOP_GRACE_S = 5.0  # from SIGTERM (and SIGCONT) at a run's end to SIGKILL
# "0" runs every listener in a process of its own (the behaviour before shared samplers;
# benchmarks/listeners.py uses it for the "separate processes" rows)
SHARED_SAMPLER_ENV = "RADTRACK_SHARED_SAMPLER"


class ListenerPopen(subprocess.Popen[str]):
    """A listener process reaped with ``os.wait4``: :attr:`rusage` holds its resource usage
    once it ended; what it cost the launcher and what it reported at its end are kept here."""

    rusage: Any = None  # os.wait4's resource usage, once reaped
    members: tuple[str, ...] = ()  # the listeners it ran
    intake_cpu_s: float | None = None  # CPU time of its reader thread, once that ended
    _err: list[str] | None = None

    def _wait4(self, pid: int, flags: int) -> tuple[int, int]:
        got, status, usage = os.wait4(pid, flags)
        if got == pid:
            self.rusage = usage
        return got, status

    def _internal_poll(self, _deadstate: Any = None, **_: Any) -> int | None:
        return super()._internal_poll(_deadstate, _waitpid=self._wait4)  # type: ignore[misc]

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        try:
            return self._wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0

    @property
    def cpu_s(self) -> float | None:
        """User + system CPU seconds of the ended process (None while it runs)."""
        return None if self.rusage is None else self.rusage.ru_utime + self.rusage.ru_stime

    def err_lines(self) -> list[str]:
        """Its stderr, read once after it ended (stats lines included)."""
        if self._err is None:
            self._err = self.stderr.read().strip().splitlines() if self.stderr else []
        return self._err

    def stats(self) -> dict[str, Stats]:
        """Listener -> the Stats line it wrote on stderr at a clean stop."""
        out = {}
        for line in self.err_lines():
            if line.startswith('{"type": "stats"'):
                with contextlib.suppress(ValueError):
                    msg = decode(line)
                    if type(msg) is Stats:
                        out[msg.listener] = msg
        return out

    def last_error(self, code: int) -> str:
        """Why it ended: its stderr's last line that is no stats line."""
        err = [x for x in self.err_lines() if not x.startswith('{"type": "stats"')]
        return err[-1] if err else f"exited with code {code}"


def _spawn(argv: list[str], env: dict[str, str], members: Sequence[str]) -> ListenerPopen:
    proc = ListenerPopen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True, env=env,
                         start_new_session=True, preexec_fn=set_parent_death_signal)
    proc.members = tuple(members)
    return proc


def _read_lines(proc: ListenerPopen, take: Any) -> None:
    """A reader thread's loop: each line of ``proc`` to ``take``; then its own CPU time."""
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            take(line)
    finally:
        proc.intake_cpu_s = time.thread_time()


class ListenerProc:
    """One listener of a run: its process (its own, or a :class:`SharedSampler`'s),
    readiness, failures, restarts and the positions a restart picks up from."""

    def __init__(self, name: str, sink: Sink, interval: float, devices: list[str], pid: int,
                 outdir: Path, env: dict[str, str], since: float | None = None):
        self.name = name
        self.sink = sink
        self.interval = interval
        self.launch = ListenerLaunch.one(name, interval, devices, pid, outdir, since)
        self.env = env
        self.proc: ListenerPopen | None = None
        self.spawned: list[ListenerPopen] = []  # every process it ran in (restarts, shared)
        self.reader: threading.Thread | None = None
        self.ready = threading.Event()
        self.restarts = 0
        self.next_restart: float | None = None
        self.failure = ""  # last reason it died
        self.stopping = False
        self.gave_up = False
        # source-stamped samples (smi's driver power buffer): where a restart picks up
        self.resume: dict[str, int] = {}
        self.sampler: SharedSampler | None = None  # the shared process it runs in, if any
        self.failed_inside = False  # it failed inside a shared sampler that went on
        self.last_line = time.monotonic()  # when its process last wrote a line (or started)
        self.killed_at_stop = False  # it did not end within the stop's grace: SIGKILL

    def start(self) -> None:
        self.last_line = time.monotonic()
        if self.sampler is not None:
            self.sampler.start()
            return
        self.ready.clear()
        self.proc = _spawn(self.argv(), self.env, [self.name])
        self.spawned.append(self.proc)
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True,
                                       name=f"listener-{self.name}")
        self.reader.start()

    def argv(self) -> list[str]:
        """Its process's command line, picking up from its last positions."""
        return self.launch.argv(self.resume)

    def read_once(self) -> None:
        """Only a process before its first reading reaches back to the run's start
        (``since``): once one has read, a restart picks up from its resume positions, and
        its energy counts from the restart (nothing is counted twice)."""
        if self.launch.since is not None:
            self.launch = replace(self.launch, since=None)

    def _read(self, proc: ListenerPopen) -> None:
        _read_lines(proc, lambda line: self.take(self.sink.feed(self.name, line)))

    def take(self, msg: Message | None) -> None:
        """Note what one of its lines says (readiness, restart positions, failure)."""
        self.last_line = time.monotonic()
        if type(msg) is Sample or type(msg) is Samples:
            self.read_once()
            if msg.resume is not None:
                self.resume.update(msg.resume)
        elif type(msg) is Hello:
            self.ready.set()
        elif type(msg) is Error:
            self.failure = msg.message

    def wait_ready(self, deadline: float) -> bool:
        return self.ready.wait(max(0.0, deadline - time.monotonic()))

    def check(self) -> str | None:
        """Call often while the run lives: restarts a dead listener with backoff (at most
        MAX_RESTARTS times). Returns a tag value when something changed. A listener that
        failed inside a shared sampler whose other listeners go on leaves it and is
        restarted in a process of its own; a shared sampler that died is restarted with
        all its listeners."""
        if self.stopping or self.gave_up or (self.proc is None and self.next_restart is None):
            return None
        now = time.monotonic()
        if self.next_restart is not None:
            if now >= self.next_restart:
                self.next_restart = None
                self.start()
            return None
        assert self.proc is not None
        if self.sampler is not None and self.failed_inside:
            self.sampler.leave(self)
            reason = self.failure
        else:
            code = self.proc.poll()
            if code is None:
                silent = now - self.last_line
                if not self.ready.is_set() or silent < stall_s(self.interval):
                    return None
                # hung: ended as one that died (a shared process: all of its listeners)
                stopping.stop(self.proc, (signal.SIGKILL,), STOP_GRACE_S, group=True)
                self.failure = f"no line for {silent:.0f} s (hung): killed"
            reason = self.failure or self._exit_reason(code)
        if self.restarts >= MAX_RESTARTS:
            self.gave_up = True
            if self.sampler is not None:
                self.sampler.leave(self)
            return f"failed after {self.restarts} restarts: {reason}"
        self.restarts += 1
        self.next_restart = now + 2 ** (self.restarts - 1)  # 1 s, 2 s, 4 s
        return f"restarted {self.restarts}x: {reason}"

    def _exit_reason(self, code: int) -> str:
        if self.sampler is not None:
            return self.sampler.exit_reason(code)
        if self.reader is not None:
            self.reader.join(timeout=2)
        return self.proc.last_error(code) if self.proc is not None else f"exited with code {code}"

    def stop(self, timeout: float = STOP_GRACE_S) -> None:
        """Stop sampling and wait until every line it wrote is in the sink. Safe twice."""
        self.stopping = True
        if self.sampler is not None:
            self.sampler.stop(timeout)
            return
        self.killed_at_stop = _stop(self.proc, self.reader, timeout) or self.killed_at_stop


def stall_s(interval: float) -> float:
    """Seconds without a line after which a listener reading every ``interval`` s hangs:
    :data:`STALL_S` (``$RADTRACK_LISTENER_STALL_S``), and at least ten of its intervals."""
    try:
        floor = float(os.environ.get(STALL_ENV, STALL_S))
    except ValueError:
        floor = STALL_S
    return max(floor if floor > 0 else STALL_S, 10 * interval)


def _stop(p: ListenerPopen | None, reader: threading.Thread | None, timeout: float) -> bool:
    """SIGTERM, up to ``timeout`` s, SIGKILL; then until the reader took its last line.
    True when it had to be killed (it hung: its last readings may be lost)."""
    ended_by = stopping.stop(p, stopping.TERM_THEN_KILL, timeout)
    if reader is not None:
        reader.join(timeout=10)
    return ended_by == signal.SIGKILL


class SharedSampler:
    """Several listeners of one run in one process (one import, one NVML session, one
    wake-up schedule): ``python -m radtrack.listeners smi@0.1+dcgm@1``. Every line names its
    listener; the reader hands it to that listener's stream in the sink (so keys, spool
    files, steps and hellos stay per listener) and to its :class:`ListenerProc`."""

    def __init__(self, members: list[ListenerProc]):
        self.members = list(members)
        for m in self.members:
            m.sampler = self
        self.proc: ListenerPopen | None = None
        self.reader: threading.Thread | None = None
        self._reason: tuple[ListenerPopen, str] | None = None

    @property
    def names(self) -> str:
        return "+".join(m.name for m in self.members)

    def argv(self) -> list[str]:
        """The command line of the process, picking up from every member's last positions."""
        if len(self.members) == 1:  # the others left it: a restart is a plain listener process
            return self.members[0].argv()
        launch = ListenerLaunch.shared([m.launch for m in self.members])
        return launch.argv({k: v for m in self.members for k, v in m.resume.items()})

    def start(self) -> None:
        """Start (or restart, with every member's resume positions) once for all members."""
        if self.proc is not None and self.proc.poll() is None:
            return  # a member's restart came after another member's had started it
        proc = _spawn(self.argv(), self.members[0].env, [m.name for m in self.members])
        for m in self.members:
            m.spawned.append(proc)
            m.last_line = time.monotonic()
            m.ready.clear()
            m.next_restart = None
            m.failed_inside = False
            m.proc, m.reader = proc, None
        self.proc = proc
        self.reader = threading.Thread(target=self._read, args=(proc, list(self.members)),
                                       daemon=True, name=f"listener-{self.names}")
        self.reader.start()
        for m in self.members:
            m.reader = self.reader

    def _read(self, proc: ListenerPopen, members: list[ListenerProc]) -> None:
        by_name = {m.name: m for m in members}
        sink = members[0].sink

        def take(line: str) -> None:
            line = line.strip()
            if not line:
                return
            line, msg = decode_line(line)
            member = by_name.get(getattr(msg, "listener", None) or "")
            # a line for no one listener (the process failed as a whole) concerns them all
            for m in [member] if member is not None else members:
                m.take(sink.feed(m.name, line, msg))
                if type(msg) is Error and member is not None and proc.poll() is None:
                    m.failed_inside = True

        _read_lines(proc, take)

    def leave(self, member: ListenerProc) -> None:
        """``member`` runs without this process from now on (its own, after a restart)."""
        if member in self.members:
            self.members.remove(member)
        member.sampler = None
        member.failed_inside = False
        member.proc = member.reader = None  # stopping it must not stop the others

    def exit_reason(self, code: int) -> str:
        """Why the process ended (its stderr's last line), read once for every member."""
        proc = self.proc
        assert proc is not None
        if self._reason is None or self._reason[0] is not proc:
            if self.reader is not None:
                self.reader.join(timeout=2)
            self._reason = (proc, proc.last_error(code))
        return self._reason[1]

    def stop(self, timeout: float = STOP_GRACE_S) -> None:
        for m in self.members:
            m.stopping = True
        if _stop(self.proc, self.reader, timeout):
            for m in self.members:
                m.killed_at_stop = True


def start_listeners(entries: Sequence[tuple[str, float]], sink: Sink, devices: list[str], pid: int,
                    outdir: Path, env: dict[str, str], since: float | None = None) -> list[ListenerProc]:
    """Start a run's listeners, ``(name, interval)`` each (a ``ListenerChoice`` with its
    interval: ``choice.at(run_interval)``): one process per listener, except
    that listeners naming the same ``shared_sampler`` session run in one process (unless
    ``RADTRACK_SHARED_SAMPLER=0``). One :class:`ListenerProc` per listener either way.
    ``since``: the run's start, which their first processes read back to where they can
    (``ListenerConfig.since``)."""
    from radtrack.listeners.registry import get

    procs = [ListenerProc(name, sink, every, devices, pid, outdir, env, since) for name, every in entries]
    groups: dict[str, list[ListenerProc]] = {}
    if env.get(SHARED_SAMPLER_ENV, "1") != "0":
        for lp in procs:
            session = _session(get, lp.name, env)
            if session is None:
                continue
            group = groups.setdefault(session, [])
            if all(m.name != lp.name for m in group):  # a listener asked for twice runs apart
                group.append(lp)
    for group in groups.values():
        if len(group) > 1:
            SharedSampler(group)
    for lp in procs:
        if lp.sampler is None or lp is lp.sampler.members[0]:
            lp.start()  # a shared sampler starts once, for all its listeners
    return procs


def _session(get: Any, name: str, env: Mapping[str, str]) -> str | None:
    try:
        cls = get(name)
        return None if cls.wraps_command else cls.shared_sampler(env)
    except Exception:  # an unknown or broken listener fails in its own process, as before
        return None


def hello_tags(name: str, hello: Hello | None) -> dict[str, str]:
    """Tags a listener reported in its hello line, plus its metric count and interval."""
    if hello is None:
        return {}
    tags = {str(k): str(v) for k, v in hello.tags.items()}
    tags[listener_tag(name, "metrics")] = str(len(hello.metrics))
    if hello.interval is not None:
        tags[listener_tag(name, "interval_s")] = f"{hello.interval:g}"
    return tags
