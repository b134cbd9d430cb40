"""Ending child processes: signal, wait a grace, escalate to the next signal, reap.

Every place the launcher stops something goes through here, each with its own escalation:

- a row's workload at the end or on Ctrl-C: :class:`GroupStopper`, :data:`ROW_ESCALATION` to
  the process group, stepped by the supervisor loop so that it never blocks;
- what a row's group left behind after its leader exited: :func:`reap_group`;
- what the script's tree left running outside its group (a ``setsid`` daemon, a process
  holding the script's output): :func:`leftovers`, then :func:`stop_pids`;
- a listener: :func:`stop` with SIGTERM then SIGKILL to the listener process;
- a held row after a failed start: :func:`stop` waiting first (it exits on its own once the
  barrier closes), then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from radtrack.liveness import pid_alive

#: a row's workload: ask (SIGINT, Python's KeyboardInterrupt), insist, then kill
ROW_ESCALATION = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
#: a group whose leader already exited, and a listener
TERM_THEN_KILL = (signal.SIGTERM, signal.SIGKILL)
POLL_S = 0.05


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; False when the group is gone (or not ours)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop(proc: subprocess.Popen | None, steps: Sequence[int | None], grace: float,
         group: bool = False) -> int | None:
    """Blocking: for each step send its signal (None: send nothing) to ``proc`` (to its
    process group with ``group``), wait up to ``grace`` s for it to exit, else take the next
    step; after the last, wait until it exits. A signal it may handle is followed by SIGCONT:
    a stopped process (SIGSTOP, a debugger let go) acts on it at once instead of being
    killed a grace later. Reaps ``proc``; returns the last signal sent before it exited
    (None: it ended on its own, or had already)."""
    if proc is None:
        return None
    sent = None
    for sig in steps:
        if proc.poll() is not None:
            return sent
        if sig is not None:
            sent = sig
            _deliver(proc, sig, group)
        try:
            proc.wait(grace)
            return sent
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
    return sent


def _deliver(proc: subprocess.Popen, sig: int, group: bool) -> None:
    """``sig`` to ``proc`` (its process group with ``group``), then SIGCONT unless it was
    SIGKILL: a stopped process (SIGSTOP, a debugger) acts on it at once."""
    for one in (sig,) if sig == signal.SIGKILL else (sig, signal.SIGCONT):
        if group:
            signal_group(proc.pid, one)
        else:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(one)


def reap_group(pgid: int, timeout: float = 5.0) -> None:
    """After the leader exited, end whatever else of its group is left (workers, helpers):
    :data:`TERM_THEN_KILL`, each followed by up to ``timeout`` s for the group to vanish."""
    for sig in TERM_THEN_KILL:
        if not signal_group(pgid, sig):
            return
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not signal_group(pgid, 0):
                return
            time.sleep(POLL_S)


class GroupStopper:
    """Stop a process group in stages without blocking: the first signal of ``steps`` on
    :meth:`request`, each next one ``grace`` seconds later (SIGINT, then SIGTERM after
    ``grace``, then SIGKILL after ``grace`` more), as :meth:`tick` finds it still running.
    Each signal but SIGKILL is followed by SIGCONT, as in :func:`stop`."""

    def __init__(self, proc: subprocess.Popen[bytes], grace: float,
                 steps: Sequence[int] = ROW_ESCALATION, before: Callable[[], None] | None = None):
        self.proc = proc
        self.before = before  # called once, before the first signal (the row's stop file)
        self.grace = grace
        self.steps = tuple(steps)
        self.started: float | None = None
        self.stage = 0  # how many signals were sent

    def request(self) -> None:
        if self.started is None:
            self.started = time.monotonic()
            if self.before is not None:
                with contextlib.suppress(Exception):
                    self.before()
            self._next()

    def tick(self) -> None:
        if self.started is None or self.proc.poll() is not None:
            return
        if self.stage < len(self.steps) and time.monotonic() - self.started >= self.stage * self.grace:
            self._next()

    def _next(self) -> None:
        _deliver(self.proc, self.steps[self.stage], group=True)
        self.stage += 1


def leftovers(marker: tuple[str, str], pipes: Iterable[int] = ()) -> dict[int, str]:
    """Processes still running that belong to a row's script (Linux ``/proc``): those whose
    environment holds ``marker`` (name, value), which every descendant inherits unless it
    cleared its environment, and those holding one of ``pipes`` (the script's stdout and
    stderr pipes, by inode) open. pid -> its command line. This process and processes of
    other users are never listed."""
    want = f"{marker[0]}={marker[1]}".encode()
    links = {f"pipe:[{inode}]" for inode in pipes}
    uid, me = os.getuid(), os.getpid()
    found: dict[int, str] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        proc = Path("/proc", entry)
        try:
            if proc.stat().st_uid != uid:
                continue
            ours = want in (proc / "environ").read_bytes().split(b"\0")
            if not ours and links:
                ours = any(_link(proc / "fd" / fd) in links for fd in os.listdir(proc / "fd"))
            if ours and _state(proc) != "Z":
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip()
                found[int(entry)] = cmd.decode(errors="replace") or f"[{_name(proc)}]"
        except OSError:
            continue  # gone meanwhile, or not readable
    return found


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _state(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _name(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return "?"


def stop_pids(pids: Iterable[int], timeout: float = 2.0) -> list[int]:
    """:data:`TERM_THEN_KILL` to each of ``pids`` (not our children: nothing to reap), each
    step followed by up to ``timeout`` s for them to go; returns those still there after it."""
    left = list(pids)
    for sig in TERM_THEN_KILL:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        end = time.monotonic() + timeout
        while left and time.monotonic() < end:
            left = [p for p in left if pid_alive(p)]
            if left:
                time.sleep(POLL_S)
        if not left:
            break
    return left


def set_parent_death_signal() -> None:
    """Linux: get SIGTERM if the launcher dies (even by SIGKILL), so nothing is orphaned."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
