"""Whether a process is still alive: one answer for every room that asks.

A process is *alive* when its pid exists and it has not exited. A zombie (exited, not yet
reaped by its parent) counts as exited: it runs no code, holds no lock it can use and writes
nothing more, so a lock, a temp file or a run it left behind is free to take over. A pid we
may not signal (``PermissionError``: another user's process) exists, so it is alive unless
/proc says it is a zombie. Off Linux (no /proc), existence alone decides.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def process_state(pid: int) -> str:
    """The one-letter state /proc gives (R, S, D, Z, ...), or '' where it cannot be read."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and has not exited (a zombie has exited)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError and kin: it exists, owned by someone else
        pass
    if not PROC.is_dir():
        return True
    return process_state(pid) not in ("Z", "X", "")
