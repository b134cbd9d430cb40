"""Code windows: named spans of a script (an epoch, the data loading, the evaluation) whose
time and energy radtrack reports.

The script side (:class:`WindowRecorder`, used by ``RADTBenchmark.window`` /
``begin_window`` / ``end_window``) only records wall-clock boundaries: one JSON line per
closed window appended to the file the launcher names in ``RADTRACK_WINDOWS_FILE``, no
NVML call and no tracking-store call in the script. The launcher joins them with the
listeners' series after the run (radtrack/postrun/window_energy.py).
"""

from __future__ import annotations

import atexit
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NAME_RE = re.compile(r"^[A-Za-z0-9_\-. ]{1,100}$")


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name) or name.strip() != name:
        raise ValueError(f"window name {name!r}: use 1-100 letters, digits, '_', '-', '.' or "
                         "inner spaces (it becomes part of MLflow metric keys)")
    return name


class WindowRecorder:
    """Open windows by (name, step); closed ones are appended to ``path`` at once."""

    def __init__(self, path: Path | None):
        self.path = path
        self._open: dict[tuple[str, int | None], float] = {}
        self._lock = threading.Lock()
        if path is not None:  # a script that never leaves its ``with`` still closes them
            atexit.register(self.close_all)

    def begin(self, name: str, step: int | None = None) -> None:
        key = (check_name(name), _step(step))
        with self._lock:
            if key in self._open:
                raise ValueError(f"window {_label(key)} is already open; end it before opening "
                                 "it again, or give each occurrence its own step")
            self._open[key] = time.time()

    def end(self, name: str, step: int | None = None) -> None:
        now = time.time()
        key = (check_name(name), _step(step))
        with self._lock:
            start = self._open.pop(key, None)
        if start is None:
            raise ValueError(f"window {_label(key)} was not opened (begin_window first)")
        self._write({"name": key[0], "step": key[1], "start": start, "end": now})

    def close_all(self) -> None:
        """At the end of the script: windows still open end now, marked as such."""
        now = time.time()
        with self._lock:
            still, self._open = self._open, {}
        for (name, step), start in still.items():
            self._write({"name": name, "step": step, "start": start, "end": now, "open_at_end": True})

    @contextmanager
    def window(self, name: str, step: int | None = None) -> Iterator[None]:
        self.begin(name, step)
        try:
            yield
        finally:
            self.end(name, step)

    def _write(self, record: dict[str, object]) -> None:
        if self.path is None:
            return
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def read_windows(path: Path) -> list[dict[str, object]]:
    """The windows a script recorded (a torn last line from a crash is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and {"name", "start", "end"} <= set(record):
            out.append(record)
    return out


def _step(step: object) -> int | None:
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"window step {step!r}: a whole number >= 0 (an epoch, a block)")
    return step


def _label(key: tuple[str, int | None]) -> str:
    return repr(key[0]) + ("" if key[1] is None else f" step {key[1]}")
