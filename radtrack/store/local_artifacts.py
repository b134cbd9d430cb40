"""Run artifacts on a file system this host sees (``file:`` URIs and plain paths), copied as
MLflow's local artifact repository does: each file written whole under a temporary name,
then renamed, so a reader never sees half a file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit


def local_folder(artifact_uri: str, artifact_path: str | None) -> Path | None:
    """The folder of ``artifact_uri`` and ``artifact_path``; None for a URI that is not a
    local path (s3://, mlflow-artifacts:, ...)."""
    parts = urlsplit(artifact_uri)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        base = Path(unquote(parts.path))
    elif parts.scheme == "" and artifact_uri:
        base = Path(artifact_uri)
    else:
        return None
    return base / artifact_path if artifact_path else base


def copy_artifact(local: Path, folder: Path) -> None:
    """A file into ``folder``, or a folder's content (recursively) into it."""
    if local.is_dir():
        for dirpath, _dirs, files in os.walk(local):
            rel = Path(dirpath).relative_to(local)
            for name in files:
                _copy_file(Path(dirpath) / name, folder / rel)
    else:
        _copy_file(local, folder)


def _copy_file(src: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{src.name}.{os.getpid()}.tmp"
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, folder / src.name)
    finally:
        tmp.unlink(missing_ok=True)
