"""Child-process plumbing: output pumps with per-row prefixes, draining them at the row's
end, and the parent-death signal.

Stopping children is radtrack/run/stopping.py's job."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from radtrack.run.rows import Row

#: after the script's process group ended, how long its output may take to reach its end
#: before radtrack looks for the processes still holding it
DRAIN_S = 1.0
#: after those were stopped, how long the rest of the output may take
DRAIN_AFTER_STOP_S = 2.0

_COLORS = [32, 34, 35, 36, 33, 31, 92, 94, 95, 96]
_term_lock = threading.Lock()


def use_color() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def prefix_for(letter: str, index: int) -> bytes:
    text = f"[{letter}] "
    if use_color():
        text = f"\033[{_COLORS[index % len(_COLORS)]}m{text}\033[0m"
    return text.encode()


def pump(src: BinaryIO, dest: BinaryIO, log: BinaryIO, log_lock: threading.Lock,
         prefix: bytes | None) -> threading.Thread:
    """Copy a child's pipe to the terminal (prefixed per line when ``prefix``) and the log."""

    def run() -> None:
        pending = b""
        fd = src.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            with log_lock:
                try:
                    log.write(chunk)
                    log.flush()
                except OSError:  # a full disk: the terminal still gets it; the pipe never stalls
                    pass
            if prefix is None:
                with _term_lock:
                    dest.write(chunk)
                    dest.flush()
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if lines:
                with _term_lock:
                    dest.write(b"".join(prefix + line + b"\n" for line in lines))
                    dest.flush()
        if pending and prefix is not None:
            with _term_lock:
                dest.write(prefix + pending + b"\n")
                dest.flush()
        src.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def drain(row: Row, say: Callable[[str], None]) -> None:
    """After the script's process (and its group) ended: read its output to the end, and stop
    what its tree left running (docs/cli.md, "The script's environment").

    A descendant that left the script's process group (``setsid``, a daemon) is not ended
    with the group and may hold the output pipes open. The pumps get :data:`DRAIN_S`; then
    every process still marked as the row's (its inherited ``RADTRACK_TREE``) or holding the
    pipes is stopped (SIGTERM, then SIGKILL) and named in one line with its pid, and the
    pumps get :data:`DRAIN_AFTER_STOP_S` more. The launch is never held longer than that."""
    from radtrack.run import stopping
    from radtrack.script.env import TREE

    deadline = time.monotonic() + DRAIN_S
    for t in row.pumps:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    pipes = []
    if any(t.is_alive() for t in row.pumps) and row.proc is not None:
        for f in (row.proc.stdout, row.proc.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                pipes.append(os.fstat(f.fileno()).st_ino)
    left = stopping.leftovers((TREE, row.key), pipes)
    if left:
        survivors = stopping.stop_pids(left)
        named = ", ".join(f"pid {pid} ({cmd[:60]})" for pid, cmd in sorted(left.items()))
        tail = (f"; still running: pid {', '.join(map(str, survivors))}" if survivors else "")
        say(f"{row.spec.letter}: the script left {len(left)} process(es) running outside its "
            f"process group, stopped with the run: {named}{tail}")
    deadline = time.monotonic() + DRAIN_AFTER_STOP_S
    for t in row.pumps:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in row.pumps):
        say(f"{row.spec.letter}: the script's output is still held open by a process radtrack "
            "could not find or stop; its further output is not shown or logged")
