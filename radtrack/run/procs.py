"""Child-process plumbing: output pumps with per-row prefixes, and the parent-death signal.

Stopping children is radtrack/run/stopping.py's job."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import BinaryIO

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


def set_parent_death_signal() -> None:
    """Linux: get SIGTERM if the launcher dies (even by SIGKILL), so nothing is orphaned."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


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
