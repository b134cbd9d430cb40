"""The MLflow runs a script makes, as the launcher learns of them: one owner of that contract.

Inside the workload process (``radtrack.script.bootstrap``) and every Python process
descending from it (radtrack/script/hook/sitecustomize.py), :func:`install` puts a hook on
MLflow's tracking client (radtrack/script/mlflow_patch.py) that appends one JSON line to
``$RADTRACK_RUN_EVENTS`` each time the process creates, resumes, renames or ends a run, by
any route (fluent ``start_run``, ``MlflowClient.create_run`` as Lightning does, HF's
callback, autolog): every route goes through ``TrackingServiceClient``. Each line is one
``O_APPEND`` write, so the processes of a row (ranks, workers, child scripts) append to one
file without tearing each other's lines. The hook costs nothing until the process imports
MLflow (it waits for that import: radtrack/script/after_import.py; it never imports MLflow
itself) and never raises into the script. This module owns the lines: what is written
(:class:`_Recorder`, :func:`keep_param`) and how it is read back. After the script ended,
the launcher reads the lines back with :func:`read_spans` and binds each run's share of the
telemetry to it (radtrack/postrun/script_runs.py).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from radtrack.script import handshake
from radtrack.script.after_import import AfterImport
from radtrack.script.after_import import when_imported as when_imported  # RADTBenchmark's
from radtrack.script.env import RUN_EVENTS as EVENTS_ENV  # the file the hook appends to

START, RESUME, RENAME, END = "start", "resume", "rename", "end"
PARAM_CUT = "param_cut"  # a param value over MLflow's limit: its full value kept in a file
#: the environment variables that say which rank of a distributed job a process is
RANK_VARS = ("RANK", "LOCAL_RANK")
_CLIENT_MODULE = "mlflow.tracking._tracking_service.client"
_FLUENT_MODULE = "mlflow.tracking.fluent"


class Span:
    """One MLflow run of the script and the time it was active in this workload. A plain class,
    not a dataclass: this module is imported in the script's process before its release, and
    dataclasses' import (inspect with it) is 6-8 ms on the 2-core VM."""

    __slots__ = ("run_id", "tracking_uri", "experiment_id", "name", "parent_id", "start", "end",
                 "status", "at_exit", "pid", "rank")

    def __init__(self, run_id: str, tracking_uri: str, experiment_id: str, name: str = "",
                 parent_id: str = "", start: float = 0.0, end: float | None = None,
                 status: str = "", at_exit: bool = False, pid: int = 0, rank: str = ""):
        self.run_id, self.tracking_uri, self.experiment_id = run_id, tracking_uri, experiment_id
        self.name, self.parent_id = name, parent_id
        self.start = start  # unix seconds: created or resumed
        self.end = end  # unix seconds: ended (None: never ended by the script)
        self.status = status  # the status the script ended it with
        self.at_exit = at_exit  # ended by MLflow's own exit handler, not by the script
        self.pid = pid  # the process that created (or first resumed) it
        self.rank = rank  # its $RANK (or $LOCAL_RANK) in a distributed job, "" outside one

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is Span and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass without frozen

    def __repr__(self) -> str:
        return f"Span({', '.join(f'{f}={getattr(self, f)!r}' for f in self.__slots__)})"


def absolute_uri(uri: str) -> str:
    """A tracking URI the launcher can open from any folder: relative SQLite and file paths
    made absolute (the script may have changed its working folder)."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + os.path.abspath(uri.removeprefix("sqlite:///"))
    if uri.startswith("file:") and not uri.startswith("file:///"):
        return Path(uri.removeprefix("file:")).absolute().as_uri()
    if ":" not in uri and not uri.startswith(("databricks", "uc")):
        return Path(uri).absolute().as_uri()  # a plain folder: MLflow's file store
    return uri


# -- the writing side (inside the script's process) ---------------------------------------
class _Recorder:
    """Appends this process's run events to ``path``; told by the MLflow patches
    (radtrack/script/mlflow_patch.py ``RunReports``), which it installs once MLflow is
    imported."""

    def __init__(self, path: str, tracking_uri: str | None):
        self.path = path
        self.tracking_uri = absolute_uri(tracking_uri) if tracking_uri else None
        self.created: set[str] = set()
        self.exiting = False
        self.lock = threading.Lock()

    def emit(self, event: str, run_id: str, t: float | None = None, **fields: Any) -> None:
        line = json.dumps({"event": event, "run_id": run_id, "t": t or time.time(),
                           "pid": os.getpid(), **fields})
        try:
            with self.lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, (line + "\n").encode())
                finally:
                    os.close(fd)
        except OSError:
            pass  # telemetry binding is best effort; the script must never notice

    def started(self, run_id: str, uri: str, experiment_id: str, name: str, parent: str,
                t: float | None = None) -> None:
        """``t``: the run's recorded start (unix s), where the store gave one."""
        self.created.add(run_id)
        self.emit(START, run_id, t, uri=absolute_uri(uri), experiment_id=experiment_id, name=name,
                  parent=parent, rank=_rank())

    def resumed(self, run_id: str, uri: str, experiment_id: str, name: str, parent: str) -> None:
        self.emit(RESUME, run_id, uri=absolute_uri(uri), experiment_id=experiment_id, name=name,
                  parent=parent, rank=_rank())

    def renamed(self, run_id: str, name: str) -> None:
        self.emit(RENAME, run_id, name=name)

    def ended(self, run_id: str, t: float, status: str) -> None:
        self.emit(END, run_id, t=t, status=status, at_exit=self.exiting)

    def check_params(self, run_id: str, params: Any) -> None:
        """``params``: (key, value) pairs just logged; over-long ones go to :func:`keep_param`."""
        from radtrack.script.params import MAX_PARAM_LEN

        for key, value in params:
            text = str(value)
            if len(text) > MAX_PARAM_LEN:
                keep_param(run_id, str(key), text, self.path)

    def tracks_into(self, uri: str) -> bool:
        """Whether ``uri`` is the store radtrack tracks the row into."""
        return absolute_uri(uri) == self.tracking_uri

    def exit_begins(self) -> None:
        self.exiting = True  # runs ended from now on are ended by MLflow's exit handler

    def patch_client(self, module: ModuleType) -> None:
        from radtrack.script import mlflow_patch

        mlflow_patch.patch_client(self, module)

    def patch_fluent(self, module: ModuleType) -> None:
        from radtrack.script import mlflow_patch

        mlflow_patch.patch_fluent(self, module)


_cuts = [0]
_cuts_lock = threading.Lock()


def keep_param(run_id: str, key: str, value: str, events: str | None = None,
               folder: Path | None = None) -> None:
    """A param value over MLflow's limit (script/params.py), logged to ``run_id`` ("": the
    row run): keep the whole value in the row folder (``folder``, default
    ``$RADTRACK_ROW_DIR``) and append one event to ``events`` (default
    ``$RADTRACK_RUN_EVENTS``). After the row, the launcher stores the value as the run's
    artifact ``params/<key>.txt``, tags the run and says it in one line
    (radtrack/postrun/script_runs.py). Never raises."""
    events = events or os.environ.get(EVENTS_ENV)
    if not events:
        return
    where = folder or Path(os.environ.get(handshake.ROW_DIR) or os.path.dirname(events))
    with _cuts_lock:
        _cuts[0] += 1
        path = where / "params" / f"{os.getpid()}-{_cuts[0]}.txt"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value, encoding="utf-8")
    except OSError:
        path = Path("")  # a full disk: the tag and the line still tell
    line = json.dumps({"event": PARAM_CUT, "run_id": run_id, "t": time.time(), "pid": os.getpid(),
                       "key": key, "chars": len(value), "file": str(path) if path.name else ""})
    try:
        fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _rank() -> str:
    return next((os.environ[v] for v in RANK_VARS if os.environ.get(v)), "")


def stop_requested() -> dict | None:
    """The stop radtrack asked this row for (handshake.STOP_FILE), or None: a
    KeyboardInterrupt then is radtrack's, not the user's."""
    return handshake.stop_request()


_installed: list[_Recorder] = []  # this process's recorder, once installed


def recorder() -> _Recorder | None:
    """This process's recorder (RADTBenchmark reports its cut params through it)."""
    return _installed[0] if _installed else None


def install(path: str | None = None) -> bool:
    """Record the process's MLflow runs into ``path`` (default ``$RADTRACK_RUN_EVENTS``).
    False when there is nowhere to record, MLflow was already imported, or the hook is
    installed already (the bootstrap installs it, and so does the hook folder's
    sitecustomize in every Python process of the row)."""
    path = path or os.environ.get(EVENTS_ENV)
    if not path or _CLIENT_MODULE in sys.modules or _installed:
        return False
    rec = _Recorder(path, os.environ.get("MLFLOW_TRACKING_URI"))
    _installed.append(rec)
    hooks = {_CLIENT_MODULE: rec.patch_client, _FLUENT_MODULE: rec.patch_fluent}
    sys.meta_path.insert(0, AfterImport(hooks))
    return True


# -- the reading side (the launcher, after the script ended) -----------------------------
def read_spans(path: Path) -> list[Span]:
    """The runs recorded in ``path``, in the order they appeared; a run resumed again after it
    ended keeps its first start and its last end. Torn or foreign lines are skipped."""
    spans: dict[str, Span] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            ev = json.loads(line)
            kind, run_id, t = ev["event"], str(ev["run_id"]), float(ev["t"])
        except (ValueError, KeyError, TypeError):
            continue
        span = spans.get(run_id)
        if kind in (START, RESUME):
            if span is None:
                spans[run_id] = Span(run_id, str(ev.get("uri", "")), str(ev.get("experiment_id", "")),
                                     str(ev.get("name", "")), str(ev.get("parent", "")), start=t,
                                     pid=int(ev.get("pid") or 0), rank=str(ev.get("rank", "")))
            else:
                span.end, span.status, span.at_exit = None, "", False
        elif span is None:
            continue
        elif kind == RENAME:
            span.name = str(ev.get("name", span.name))
        elif kind == END:
            span.end, span.status = t, str(ev.get("status", "FINISHED"))
            span.at_exit = bool(ev.get("at_exit", False))
    return list(spans.values())


class ParamCut:
    """A param value longer than MLflow keeps, logged to ``run_id`` ("" : the row run)."""

    __slots__ = ("run_id", "key", "chars", "file")

    def __init__(self, run_id: str, key: str, chars: int, file: str):
        self.run_id, self.key, self.chars, self.file = run_id, key, chars, file


def read_param_cuts(path: Path) -> list[ParamCut]:
    """The over-long params recorded in ``path``, the last of each (run, key) pair."""
    found: dict[tuple[str, str], ParamCut] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            ev = json.loads(line)
            if ev["event"] != PARAM_CUT:
                continue
            cut = ParamCut(str(ev["run_id"] or ""), str(ev["key"]), int(ev["chars"]), str(ev["file"]))
        except (ValueError, KeyError, TypeError):
            continue
        found[(cut.run_id, cut.key)] = cut
    return list(found.values())
