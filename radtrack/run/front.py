"""The detached end: a thin front process that gives the shell back once a launch is durable.

With the detached end (``--detach-end``, ``RADTRACK_END=detach``, or by default on an
interactive terminal), the ``radtrack`` process the user started forks before anything
else: the child is the launcher, as without it; the parent (the front) only waits on a
pipe. Once every script of the launch has ended and what must be durable is on disk
(radtrack/run/detach.py), the launcher writes one line to the pipe (the launch's exit code
and what to tell the user), leaves the terminal and goes on storing in the background; the
front prints that line and exits with that code. Without that line (the launcher ended,
failed before its scripts ran, was interrupted) the front exits as the launcher did.

Signals: the front and the launcher share the terminal's process group, so a Ctrl-C (or
Ctrl-\\, a hang-up) reaches the launcher from the terminal exactly as without the front; a
signal sent to the front alone (``kill PID``: SIGINT, SIGTERM, SIGHUP, SIGQUIT) is passed on.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
from collections.abc import Callable

END_ENV = "RADTRACK_END"  # wait | detach: the end when no flag says
_FORWARD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_SI_USER, _SI_QUEUE, _SI_TKILL = 0, -1, -6  # sent by a process (kill, sigqueue, tgkill)

_pipe_w: int | None = None  # in the launcher: where to tell the front (None: no front)


def wanted(flag: str | None, stdout_tty: bool, dry_run: bool,
           why_waits: Callable[[bool], str | None],
           environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[bool, str]:
    """Whether this launch detaches its end, and why not when asked to ("" otherwise).
    ``flag``: "wait" / "detach" from --wait-end / --detach-end, None when neither;
    ``why_waits``: the executor's ``why_end_waits`` (radtrack/executor_contract.py): None
    where the scripts run in this process, else why their end cannot detach."""
    choice = flag or environ.get(END_ENV, "").strip().lower() or None
    if choice not in (None, "wait", "detach"):
        from radtrack.errors import RadtrackError

        raise RadtrackError(f"${END_ENV}: expected wait or detach, got {choice!r}")
    if choice == "wait" or dry_run:
        return False, ""
    why = why_waits(choice == "detach")
    if why is not None:  # a submitter, or node 0 waiting for the other nodes' ends
        return False, why
    if environ.get("SLURM_JOB_ID"):
        # the job's end kills every process of the job, a background end step included
        why = "inside a SLURM job, whose end kills its processes" if choice == "detach" else ""
        return False, why
    return (choice == "detach" or (choice is None and stdout_tty)), ""


def fork_front() -> None:
    """Fork: in the child (the launcher) return at once, with the pipe to the front armed;
    in the parent, wait for the launcher's line or its exit, then exit the way it says."""
    global _pipe_w
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARD)  # nothing lost between fork and wait
    pid = os.fork()
    if pid == 0:  # the launcher
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        os.close(r)
        _pipe_w = w
        return
    os.close(w)
    code = _wait(pid, r)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def armed() -> bool:
    """Whether this process is a launcher with a front waiting for it."""
    return _pipe_w is not None


def tell(code: int, line: str) -> None:
    """Hand the front the launch's exit code and its one line; the front exits on it."""
    global _pipe_w
    if _pipe_w is None:
        return
    data = (json.dumps({"code": code, "line": line}) + "\n").encode()
    try:
        os.write(_pipe_w, data)
    finally:
        os.close(_pipe_w)
        _pipe_w = None


def _wait(pid: int, r: int) -> int:
    """The front's loop: read the launcher's line, pass on signals sent to the front."""
    sigs = set(_FORWARD)
    buf = b""
    while True:
        ready, _, _ = select.select([r], [], [], 0.05)
        if ready:
            chunk = os.read(r, 4096)
            buf += chunk
            if buf.endswith(b"\n"):
                try:
                    msg = json.loads(buf)
                except ValueError:
                    msg = None
                if isinstance(msg, dict):
                    print(msg.get("line", ""), file=sys.stderr, flush=True)
                    return int(msg.get("code", 1))
            if not chunk:
                break  # the launcher ended without detaching
        while (info := signal.sigtimedwait(sigs, 0)) is not None:
            if info.si_code in (_SI_USER, _SI_QUEUE, _SI_TKILL) and info.si_pid != pid:
                try:
                    os.kill(pid, info.si_signo)  # sent to the front alone: the launcher's
                except ProcessLookupError:
                    pass
            # else the terminal sent it to the whole process group, the launcher included
    os.close(r)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # the launcher died of a signal: so does the front, as the shell expects
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
        os.kill(os.getpid(), -code)
        return 128 - code
    return code
