"""Atomic file writes: a reader sees the old content or the new, never half of either.

:func:`write_atomic` writes bytes; :func:`replacing` is the same for a file the caller
makes itself in the temp file (a copy, a SQLite database built or repaired there). The
bytes go to a temp file beside the target (same folder, so the rename stays on one file
system), are flushed and fsync'd, and the temp file is renamed over the target; with
``sync_folder`` the folder is fsync'd too, so the rename itself survives a power cut. A
failure removes the temp file and leaves the target as it was. ``durable=False`` skips the
fsync, for a file whose loss costs nothing but a redo (the sink's shipped markers: a marker
that lags makes the next sync resend points MLflow then ignores), so the sink's flushes pay
no disk wait. The target's permission bits
are kept when it exists (a sheet the user made read-only for others stays so).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, mode: int | None = None,
                 sync_folder: bool = False, durable: bool = True) -> Path:
    """Replace ``path`` with ``data`` atomically (fsync'd); returns the path."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif target.exists():
            shutil.copymode(target, tmp)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_folder:
        with contextlib.suppress(OSError):
            dfd = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    return target


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str], *, tmp: Path | None = None,
              durable: bool = True) -> Iterator[Path]:
    """``with replacing(target) as tmp: <make tmp>``: on a clean exit the temp file is
    fsync'd (``durable``) and renamed over ``target``; on an exception it is removed and
    ``target`` stays as it was. ``tmp``: the temp file's path where the caller names it (a
    name its own clean-up recognises), beside the target; else a fresh one there."""
    target = Path(path)
    if tmp is None:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if durable:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
