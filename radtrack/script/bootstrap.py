"""Workload process entry: wait at the launcher's barrier, then run the script as __main__.

``python -m radtrack.script.bootstrap SCRIPT [ARGS...]`` with ``RADTRACK_BARRIER_FD`` naming a
pipe the launcher writes one byte to once every row's process exists: co-located rows
start together. The release time is written to ``RADTRACK_RELEASE_FILE`` so the
launcher can log the start skew.

The script runs as ``python SCRIPT`` would run it: an exception it does not catch prints its
traceback from the script's own first frame (none of this module's or runpy's frames) and
exits 1; a ``KeyboardInterrupt`` exits as Python's does (killed by SIGINT, exit -2), without
a traceback when radtrack itself stopped the row (``--max-time``, Ctrl-C to the launcher:
script/handshake.py's stop file), with one when the interrupt is the user's.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from collections.abc import Callable
from types import TracebackType

BARRIER_FD = "RADTRACK_BARRIER_FD"
RELEASE_FILE = "RADTRACK_RELEASE_FILE"
BARRIER_ID = "RADTRACK_BARRIER_ID"  # "<st_dev>:<st_ino>" of the barrier pipe


def pipe_id(fd: int) -> str:
    st = os.fstat(fd)
    return f"{st.st_dev}:{st.st_ino}"


def _is_our_pipe(fd: int, ident: str | None) -> bool:
    try:
        return ident is not None and pipe_id(fd) == ident
    except OSError:
        return False


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m radtrack.script.bootstrap SCRIPT [ARGS...]")
    script = sys.argv[1]
    # everything that does not need the release is done while held (15 ms of imports on
    # the VM): the script's first instant follows the release as closely as it can
    from radtrack.script import run_events

    run_events.install()  # the script's own MLflow runs get their telemetry (docs/mlflow-code.md)
    fd = os.environ.pop(BARRIER_FD, None)
    ident = os.environ.pop(BARRIER_ID, None)
    if fd is not None and _is_our_pipe(int(fd), ident):
        got = os.read(int(fd), 1)
        os.close(int(fd))
        if not got:  # launcher went away before releasing us
            sys.exit(130)
    # else a wrapper in between (a profiler) closed the inherited pipe, and the descriptor
    # number may now belong to something of its own: run without the barrier then
    released = time.time()
    os.environ["RADTRACK_START_TIME"] = repr(released)
    release_file = os.environ.pop(RELEASE_FILE, None)
    if release_file:
        with open(release_file, "w") as f:
            f.write(repr(released))
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as exc:
        # Python prints it and exits (1, or by SIGINT for a KeyboardInterrupt) as it would for
        # ``python SCRIPT``; only the traceback's first frames (this module's, runpy's) go
        sys.excepthook = from_the_script(sys.excepthook, script, isinstance(exc, KeyboardInterrupt))
        raise


def script_frames(tb: TracebackType | None, script: str) -> TracebackType | None:
    """``tb`` from the script's first frame on: this module's and runpy's frames dropped
    (all of ``tb`` where the script's file is not in it: a failure before its first line)."""
    want = os.path.realpath(script)
    t = tb
    while t is not None:
        if os.path.realpath(t.tb_frame.f_code.co_filename) == want:
            return t
        t = t.tb_next
    return tb


def from_the_script(hook: Callable[..., object], script: str, interrupted: bool) -> Callable[..., None]:
    """``hook`` (Python's, or the script's own ``sys.excepthook``) given the traceback from the
    script's first frame; nothing printed for a KeyboardInterrupt radtrack asked for."""
    quiet = False
    if interrupted:
        from radtrack.script import run_events

        quiet = run_events.stop_requested() is not None

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if not quiet:
            tb = script_frames(tb, script)
            hook(kind, value.with_traceback(tb), tb)  # Python prints value.__traceback__

    return excepthook


if __name__ == "__main__":
    main()
