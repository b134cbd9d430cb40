"""The script's own logging through RADTBenchmark, appended to its row's spool.

``RADTBenchmark.log_metric`` and friends (radtrack/script/benchmark.py) never call the store
from the script's process: each call is one JSON line appended to
``<row spool>/script/records.jsonl`` (an artifact is copied to ``script/artifacts/<n>/`` at
the call, so the script may change or delete its file afterwards). The launcher's shipper
stores them (radtrack/store/scriptlog.py); this is the script's side and the layout both
sides share, so the script's package imports nothing of the store.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

SCRIPT_SPOOL_ENV = "RADTRACK_SCRIPT_SPOOL"  # the folder RADTBenchmark appends to
FOLDER = "script"
RECORDS = "records.jsonl"
SHIPPED = "records.shipped"
ARTIFACTS = "artifacts"


def folder_in(spool_dir: Path) -> Path:
    """The script's records folder inside a row's spool folder."""
    return spool_dir / FOLDER


class ScriptLog:
    """The script side: appends records; never raises (a full disk drops the value, said once)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._lock = threading.Lock()
        self._seq = 0
        self.dropped = 0

    def _write(self, record: dict[str, Any]) -> bool:
        line = (json.dumps(record, allow_nan=True) + "\n").encode()
        with self._lock:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.folder / RECORDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written = os.write(fd, line)
                    if written != len(line):  # a torn line: take it back, the value is dropped
                        os.ftruncate(fd, os.fstat(fd).st_size - written)
                        raise OSError(28, "No space left on device")
                finally:
                    os.close(fd)
                return True
            except OSError as exc:
                self.dropped += 1
                if self.dropped == 1:
                    print(f"[radtrack] RADTBenchmark: could not spool a value ({exc}); values "
                          "are dropped while this lasts", flush=True)
                return False

    def metric(self, run: str | None, key: str, value: float, step: int | None,
               timestamp: int | None = None) -> None:
        self._write({"k": "metric", "run": run, "key": key, "value": float(value),
                     "ts": int(timestamp if timestamp is not None else time.time() * 1000),
                     "step": int(step or 0)})

    def param(self, run: str | None, key: str, value: Any) -> None:
        self._write({"k": "param", "run": run, "key": key, "value": str(value)})

    def tag(self, run: str | None, key: str, value: Any) -> None:
        self._write({"k": "tag", "run": run, "key": key, "value": str(value)})

    def artifact(self, run: str | None, local_path: str, artifact_path: str | None) -> None:
        """A copy of the file or folder ``local_path`` as it is now, stored later."""
        src = Path(local_path)
        with self._lock:
            self._seq += 1
            dest = self.folder / ARTIFACTS / f"{os.getpid()}-{self._seq}"
        try:
            dest.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest / "dir")
                rel, kind = dest / "dir", "artifacts"
            else:
                shutil.copy2(src, dest / src.name)
                rel, kind = dest / src.name, "artifact"
        except OSError as exc:
            shutil.rmtree(dest, ignore_errors=True)
            if isinstance(exc, FileNotFoundError):
                raise
            self.dropped += 1
            print(f"[radtrack] RADTBenchmark: could not spool artifact {local_path} ({exc})",
                  flush=True)
            return
        self._write({"k": kind, "run": run, "path": str(rel.relative_to(self.folder)),
                     "artifact_path": artifact_path})
