"""Run artifacts on a file system this host sees (``file:`` URIs and plain paths), copied as
MLflow's local artifact repository does: each file written whole under a temporary name,
then renamed, so a reader never sees half a file."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from radtrack.store.entities import FileInfo, StoreError


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


def listing(folder: Path, artifact_path: str | None) -> list[FileInfo]:
    """MLflow's list_artifacts of a local folder (``artifact_path`` the folder's path in the
    run's artifacts): [] where there is none."""
    if not folder.is_dir():
        return []
    out = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = f"{artifact_path.rstrip('/')}/{entry.name}" if artifact_path else entry.name
        is_dir = entry.is_dir()
        out.append(FileInfo(path, is_dir, None if is_dir else entry.stat().st_size))
    return out


def download(root: Path, artifact_path: str, dst_path: str | None) -> str:
    """MLflow's download_artifacts from a run's local artifact folder ``root``: the file (or
    folder) at ``artifact_path`` copied to ``dst_path``/``artifact_path``; its local path."""
    src = root / artifact_path
    if not src.exists():
        raise StoreError(f"no artifact {artifact_path!r} in {root}", "RESOURCE_DOES_NOT_EXIST")
    out = Path(dst_path or tempfile.mkdtemp(prefix="radtrack-artifacts-")) / artifact_path
    copy_artifact(src, out if src.is_dir() else out.parent)
    return str(out)


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
    from radtrack.atomic import replacing

    folder.mkdir(parents=True, exist_ok=True)
    with replacing(folder / src.name) as tmp:  # a reader sees the whole artifact or none
        shutil.copyfile(src, tmp)
