"""The lock a launcher holds on a sheet while it runs it: ``<sheet>.lock`` next to the sheet.

An advisory ``flock`` on the lock file, which holds the holder's pid, host and start time.
The kernel drops the lock however the holder ends (even on SIGKILL); the holder removes
the file on a normal exit. A second launcher on the same sheet is refused (exit 2) with
the holder's pid and host. Where the file system has no flock (some network mounts),
the file alone is the lock, and one left by a process that no longer runs on this host
is taken over as stale.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from radtrack.errors import RadtrackError
from radtrack.liveness import pid_alive

_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class SheetLocked(RadtrackError):
    """Another launcher holds the sheet."""


def lock_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".lock")


def _holder(text: str) -> tuple[int, str, str] | None:
    """(pid, host, since) from a lock file's text, or None when it holds none."""
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        return int(fields["pid"]), fields.get("host", "?"), fields.get("since", "?")
    except (KeyError, ValueError):
        return None


def holder(sheet: Path) -> tuple[int, str, str] | None:
    """(pid, host, since) of the launcher holding the sheet now, or None: no lock file, or
    one whose holder no longer runs on this host. A holder on another host cannot be
    checked from here and is taken at its word (its lock file is removed when it ends)."""
    try:
        found = _holder(lock_path(sheet).read_text("utf-8", "replace"))
    except OSError:
        return None
    if found is None or (found[1] == socket.gethostname() and not pid_alive(found[0])):
        return None
    return found


def _read(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 4096).decode("utf-8", "replace")


def _refuse(sheet: Path, path: Path, holder: tuple[int, str, str] | None) -> SheetLocked:
    who = (f"pid {holder[0]} on host {holder[1]} (since {holder[2]})" if holder
           else "another process")
    return SheetLocked(f"{sheet} is being run by {who}: one launcher runs a sheet at a time; "
                       f"wait for it to end or stop it (its lock: {path})")


def _stale_note(holder: tuple[int, str, str] | None, path: Path) -> None:
    if holder and holder[0] != os.getpid():
        print(f"[radtrack] {path}: a stale lock of pid {holder[0]} on {holder[1]} (since "
              f"{holder[2]}), which no longer runs, is taken over", file=sys.stderr)


def _open(path: Path, sheet: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise RadtrackError(f"cannot lock {sheet}: {path}: {exc.strerror or exc}; the sheet's "
                            "folder must be writable (radtrack writes statuses back)") from None


def acquire(sheet: Path) -> int:
    """Take the sheet's lock and return its file descriptor, or raise SheetLocked."""
    path = lock_path(sheet)
    host = socket.gethostname()
    while True:
        fd = _open(path, sheet)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(_read(fd))
            os.close(fd)
            raise _refuse(sheet, path, holder) from None
        except OSError as exc:
            if exc.errno not in _NO_FLOCK:
                os.close(fd)
                raise
            holder = _holder(_read(fd))  # no flock here: the file alone is the lock
            if holder and (holder[1] != host or pid_alive(holder[0])):
                os.close(fd)
                raise _refuse(sheet, path, holder) from None
            _stale_note(holder, path)
            break
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else the holder removed it as we opened it: take the new file
            _stale_note(_holder(_read(fd)), path)
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    os.write(fd, f"pid={os.getpid()}\nhost={host}\nsince={since}\n".encode())
    return fd


def release(sheet: Path, fd: int) -> None:
    """Remove the lock file (while still holding it) and drop the lock."""
    try:
        lock_path(sheet).unlink(missing_ok=True)
    finally:
        os.close(fd)


@contextmanager
def sheet_lock(sheet: Path) -> Iterator[None]:
    """Hold the sheet's lock for the block; released on any exit, exceptions included."""
    fd = acquire(sheet)
    try:
        yield
    finally:
        release(sheet, fd)
