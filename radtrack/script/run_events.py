"""The MLflow runs a script makes, as the launcher learns of them: one owner of that contract.

Inside the workload process (``radtrack.script.bootstrap``) and every Python process
descending from it (radtrack/script/hook/sitecustomize.py), :func:`install` puts a hook on
MLflow's tracking client that appends one JSON line to ``$RADTRACK_RUN_EVENTS`` each time
the process creates, resumes, renames or ends a run, by any route (fluent ``start_run``,
``MlflowClient.create_run`` as Lightning does, HF's callback, autolog): every route goes
through ``TrackingServiceClient``. Each line is one ``O_APPEND`` write, so the processes of
a row (ranks, workers, child scripts) append to one file without tearing each other's
lines. The hook costs nothing until the process imports MLflow (it waits for that import;
it never imports MLflow itself) and never raises into the script. After the script ended,
the launcher reads the lines back with :func:`read_spans` and binds each run's share of the
telemetry to it (radtrack/postrun/script_runs.py).
"""

from __future__ import annotations

import atexit
import importlib.machinery
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from radtrack.script import handshake
from radtrack.script.env import RUN_EVENTS as EVENTS_ENV  # the file the hook appends to
from radtrack.script.env import RUN_ID as ROW_RUN_ENV

START, RESUME, RENAME, END = "start", "resume", "rename", "end"
PARAM_CUT = "param_cut"  # a param value over MLflow's limit: its full value kept in a file
RUN_NAME_TAG = "mlflow.runName"
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
def _row_run_id() -> str | None:
    """The row run's id where it is known by now (never waits for it)."""
    row = os.environ.get(ROW_RUN_ENV)
    if row:
        return row
    folder = os.environ.get(handshake.ROW_DIR)
    return handshake.read(Path(folder)).get(handshake.RUN_ID) if folder else None


class _Recorder:
    def __init__(self, path: str, tracking_uri: str | None):
        self.path = path
        self.tracking_uri = absolute_uri(tracking_uri) if tracking_uri else None
        self.created: set[str] = set()
        self.exiting = False
        self.lock = threading.Lock()
        self.row_aside: dict[int, Any] = {}  # thread -> the row run's ActiveRun, set aside

    def set_row_aside(self, module: ModuleType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Before a ``start_run(*args, **kwargs)`` of the script's own: take the row run off
        MLflow's active-run stack (not ended) where it is the active run, True if so.

        RADTBenchmark makes the row run MLflow's active run (radtrack/script/benchmark.py) so
        that plain mlflow calls in its block land there; a new top-level run of the script's
        own in that block would meet "Run ... is already active". The row run is the active
        run again once the script's runs have all ended (:meth:`take_row_back`)."""
        wanted = kwargs.get("run_id", args[0] if args else None)
        nested = kwargs.get("nested", args[3] if len(args) > 3 else False)
        stack = module._active_run_stack.get()
        if nested or len(stack) != 1:
            return False
        row = _row_run_id()
        if row is None or stack[0].info.run_id != row or wanted == row:
            return False
        self.row_aside[threading.get_ident()] = stack.pop()
        return True

    def take_row_back(self, module: ModuleType) -> None:
        stack = module._active_run_stack.get()
        if not stack and threading.get_ident() in self.row_aside:
            stack.append(self.row_aside.pop(threading.get_ident()))

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

    def check_params(self, run_id: str, params: Any) -> None:
        """``params``: (key, value) pairs just logged; over-long ones go to :func:`keep_param`."""
        from radtrack.script.params import MAX_PARAM_LEN

        for key, value in params:
            text = str(value)
            if len(text) > MAX_PARAM_LEN:
                keep_param(run_id, str(key), text, self.path)

    def patch_client(self, module: ModuleType) -> None:
        cls = module.TrackingServiceClient
        create, terminate, update = cls.create_run, cls.set_terminated, cls.update_run
        log_param, log_batch, set_tag = cls.log_param, cls.log_batch, cls.set_tag
        rec = self

        def create_run(client: Any, experiment_id: Any, start_time: Any = None, tags: Any = None,
                       run_name: Any = None) -> Any:
            run = create(client, experiment_id, start_time=start_time, tags=tags, run_name=run_name)
            try:
                tag_map = run.data.tags or {}
                rec.created.add(run.info.run_id)
                rec.emit(START, run.info.run_id, uri=absolute_uri(str(client.tracking_uri)),
                         experiment_id=str(run.info.experiment_id),
                         name=run.info.run_name or "", parent=tag_map.get("mlflow.parentRunId", ""),
                         rank=_rank())
            except Exception:  # noqa: BLE001 - never into the script
                pass
            return run

        def set_terminated(client: Any, run_id: str, status: Any = None, end_time: Any = None) -> Any:
            # the span ends when the script ends the run, not when the store (busy, or a
            # server far away) has written it
            asked = end_time / 1000 if isinstance(end_time, int | float) else time.time()
            status = rec.stopped_status(client, run_id, status)
            out = terminate(client, run_id, status=status, end_time=end_time)
            rec.emit(END, run_id, t=asked, status=str(status or "FINISHED"), at_exit=rec.exiting)
            return out

        def update_run(client: Any, run_id: str, status: Any = None, name: Any = None) -> Any:
            out = update(client, run_id, status=status, name=name)
            if name:
                rec.emit(RENAME, run_id, name=str(name))
            return out

        def patched_log_param(client: Any, run_id: str, key: Any, value: Any, *args: Any,
                              **kwargs: Any) -> Any:
            out = log_param(client, run_id, key, value, *args, **kwargs)
            try:
                rec.check_params(run_id, [(key, value)])
            except Exception:  # noqa: BLE001 - never into the script
                pass
            return out

        def patched_log_batch(client: Any, run_id: str, *args: Any, **kwargs: Any) -> Any:
            out = log_batch(client, run_id, *args, **kwargs)
            try:
                params = kwargs.get("params", args[1] if len(args) > 1 else ())
                tags = kwargs.get("tags", args[2] if len(args) > 2 else ())
                rec.check_params(run_id, [(p.key, p.value) for p in params or ()])
                for t in tags or ():
                    if t.key == RUN_NAME_TAG:
                        rec.emit(RENAME, run_id, name=str(t.value))
            except Exception:  # noqa: BLE001 - never into the script
                pass
            return out

        def patched_set_tag(client: Any, run_id: str, key: Any, value: Any, *args: Any,
                            **kwargs: Any) -> Any:
            out = set_tag(client, run_id, key, value, *args, **kwargs)
            if key == RUN_NAME_TAG:
                rec.emit(RENAME, run_id, name=str(value))
            return out

        cls.create_run, cls.set_terminated, cls.update_run = create_run, set_terminated, update_run
        cls.log_param, cls.log_batch, cls.set_tag = patched_log_param, patched_log_batch, patched_set_tag

    def stopped_status(self, client: Any, run_id: str, status: Any) -> Any:
        """The status to end a run with: the row's, tagged ``radtrack.stopped_by``, where the
        run ends FAILED or KILLED because radtrack is stopping the row (``--max-time``, Ctrl-C
        to the launcher: MLflow's ``with`` block saw the KeyboardInterrupt); else ``status``."""
        if str(status or "FINISHED") not in ("FAILED", "KILLED"):
            return status
        try:
            stop = handshake.stop_request()
            if stop is None or not stop.get("status"):
                return status
            from radtrack.store.schema import STOPPED_BY

            client.set_tag(run_id, STOPPED_BY, str(stop.get("stopped_by", "")))
            return str(stop["status"])
        except Exception:  # noqa: BLE001 - never into the script
            return status

    def patch_fluent(self, module: ModuleType) -> None:
        start = module.start_run
        rec = self

        def start_run(*args: Any, **kwargs: Any) -> Any:
            try:
                aside = rec.set_row_aside(module, args, kwargs)
            except Exception:  # noqa: BLE001 - an MLflow whose internals moved: as before
                aside = False
            try:
                active = start(*args, **kwargs)
            except BaseException:
                if aside:
                    rec.take_row_back(module)
                raise
            try:
                run_id = active.info.run_id
                if run_id not in rec.created:  # an existing run taken up again
                    from mlflow.tracking import get_tracking_uri

                    rec.emit(RESUME, run_id, uri=absolute_uri(get_tracking_uri()),
                             experiment_id=str(active.info.experiment_id),
                             name=active.info.run_name or "",
                             parent=(active.data.tags or {}).get("mlflow.parentRunId", ""),
                             rank=_rank())
            except Exception:  # noqa: BLE001 - never into the script
                pass
            return active

        start_run.__doc__, start_run.__wrapped__ = start.__doc__, start  # type: ignore[attr-defined]
        module.start_run = start_run
        end = module.end_run

        def end_run(*args: Any, **kwargs: Any) -> Any:
            out = end(*args, **kwargs)
            if rec.row_aside:
                rec.take_row_back(module)
            return out

        end_run.__doc__, end_run.__wrapped__ = end.__doc__, end  # type: ignore[attr-defined]
        module.end_run = end_run
        default_experiment = module._get_experiment_id

        def _get_experiment_id() -> Any:
            # The row's experiment is the default only where MLflow itself would fall back
            # to its default: no set_experiment, no experiment in the environment, and the
            # store radtrack tracks into (a script with a store of its own keeps its Default).
            if (module._active_experiment_id is None
                    and not os.environ.get("MLFLOW_EXPERIMENT_NAME")
                    and not os.environ.get("MLFLOW_EXPERIMENT_ID")):
                from mlflow.tracking import get_tracking_uri

                if absolute_uri(get_tracking_uri()) == rec.tracking_uri:
                    row_experiment = handshake.wait_for(handshake.EXPERIMENT_ID)
                    if row_experiment:
                        return row_experiment
            return default_experiment()

        module._get_experiment_id = _get_experiment_id
        # Exit handlers run last-registered first: this one runs just before MLflow's
        # own (registered when fluent was imported), so runs that handler ends are known.
        atexit.register(self._exiting)

    def _exiting(self) -> None:
        self.exiting = True


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


class _AfterImport:
    """Calls ``callback(module)`` once the named module has been imported, whoever imports it.
    A meta path finder by protocol (find_spec), not by importlib.abc's base class: its import
    (importlib.resources with it, 6 ms on the 2-core VM) would come before the script's release."""

    def __init__(self, callbacks: dict[str, Callable[[ModuleType], None]]):
        self.callbacks = callbacks

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.callbacks:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self.callbacks.pop(fullname))
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)
        return spec


class _Loader:
    def __init__(self, inner: Any, callback: Callable[[ModuleType], None]):
        self.inner, self.callback = inner, callback

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        try:
            self.callback(module)
        except Exception:  # noqa: BLE001 - an MLflow whose internals moved: no binding
            pass

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... as the real loader
        return getattr(self.inner, name)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> bool:
    """Call ``callback(module)`` once module ``name`` has been imported, by whoever imports it
    (RADTBenchmark attaches the row run when the script imports MLflow, instead of importing
    it itself: radtrack/script/benchmark.py). False when it is imported already: nothing is
    registered, the caller acts now."""
    if name in sys.modules:
        return False
    sys.meta_path.insert(0, _AfterImport({name: callback}))
    return True


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
    sys.meta_path.insert(0, _AfterImport(hooks))
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
