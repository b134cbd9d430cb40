"""Launchers still storing in the background (the detached end): a pid file each, readers wait.

A launcher that detached its end (radtrack/run/detach.py) keeps
``$RADTRACK_HOME/finishers/<pid>.json`` (its pid, host, start, log, spool folders) for as
long as it stores, holding an exclusive ``flock`` on it: however it ends, SIGKILL included,
the kernel drops the lock, so a file whose lock can be taken is stale (removed by the
first reader that finds it). ``radtrack report``, ``export``, ``ui`` and ``sync`` wait for
the live ones first (:func:`wait_for`, up to ``$RADTRACK_END_WAIT_S``), so that they read
complete runs; ``radtrack sync`` leaves a live finisher's spool alone regardless (its
``owner.lock``).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from radtrack.store.outage import env_seconds

DIR = "finishers"
WAIT_ENV = "RADTRACK_END_WAIT_S"
DEFAULT_WAIT_S = 300.0
POLL_S = 0.05


@dataclass
class Finisher:
    """This process's own pid file, held until :func:`unregister`."""

    path: Path
    fd: int


def register(home: Path, log: Path, spools: list[str]) -> Finisher:
    """Write and lock this process's pid file (locked before it is visible under its name)."""
    folder = home / DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    tmp = folder / f".{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.time(), "log": str(log),
                                 "spools": spools}).encode())
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return Finisher(path, fd)


def unregister(f: Finisher) -> None:
    """The background end is done: the pid file goes (then the lock)."""
    try:
        f.path.unlink(missing_ok=True)
    finally:
        os.close(f.fd)


def running(home: Path, before: float | None = None) -> list[dict]:
    """The live finishers of ``home`` but this process (their pid files' contents), only
    those that went to the background before ``before`` (unix time) when given; stale
    files are removed."""
    folder = home / DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.stem == str(os.getpid()):
            continue  # this process's own (a reader inside a background end)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # removed meanwhile: done
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # its finisher holds it: alive
                try:
                    info = json.loads(os.read(fd, 65536) or b"{}")
                except ValueError:
                    info = {"pid": path.stem}
                if before is None or float(info.get("since") or 0) < before:
                    out.append(info)
                continue
            except OSError:
                continue  # a file system without flock: not judged here
            path.unlink(missing_ok=True)  # its finisher ended without removing it (killed)
        finally:
            os.close(fd)
    return out


def wait_s() -> float:
    return env_seconds(WAIT_ENV, DEFAULT_WAIT_S)


def wait_for(home: Path, log: Callable[[str], None], bound: float | None = None,
             before: float | None = None) -> bool:
    """Until no launcher of ``home`` (that detached before ``before``) stores in the
    background, or ``bound`` seconds (default ``$RADTRACK_END_WAIT_S``); one line when there
    is one to wait for, one more when the bound passed. True when none is left."""
    alive = running(home, before)
    if not alive:
        return True
    bound = wait_s() if bound is None else bound
    who = ", ".join(f"pid {f.get('pid')} (log {f.get('log', '?')})" for f in alive)
    log(f"radtrack: waiting up to {bound:.0f} s for {len(alive)} launch(es) still storing "
        f"their runs in the background: {who}")
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        alive = running(home, before)
        if not alive:
            return True
    log(f"radtrack: still storing after {bound:.0f} s ({', '.join(str(f.get('pid')) for f in alive)}); "
        "going on with what the store holds now")
    return False
