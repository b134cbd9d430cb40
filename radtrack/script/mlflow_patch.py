"""MLflow's tracking client and fluent API patched to report every run the process makes.

Imported only once the script's process imports MLflow (radtrack/script/run_events.py
``install`` waits for that import: radtrack/script/after_import.py), never by radtrack
itself. Every route by which a process creates, resumes, renames or ends a run (fluent
``start_run``, ``MlflowClient.create_run`` as Lightning does, HF's callback, autolog)
goes through ``TrackingServiceClient``; its methods are wrapped to tell a
:class:`RunReports` (the run-events recorder) what happened, and what the script's calls
return or raise is MLflow's own: a report that fails is dropped, never raised into the
script. The fluent API gets three more duties: a run radtrack is stopping ends with the
row's status (:func:`stopped_status`), the row run RADTBenchmark made active steps aside
for a top-level run of the script's own, and the row's experiment is the default one.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from radtrack.script import handshake
from radtrack.script.env import RUN_ID as ROW_RUN_ENV

RUN_NAME_TAG = "mlflow.runName"
PARENT_TAG = "mlflow.parentRunId"


class RunReports(Protocol):
    """What the patches tell (radtrack/script/run_events.py ``_Recorder``)."""

    created: set[str]  # the runs this process created: a start_run of any other resumes it

    def started(self, run_id: str, uri: str, experiment_id: str, name: str, parent: str,
                t: float | None = None) -> None: ...

    def resumed(self, run_id: str, uri: str, experiment_id: str, name: str, parent: str) -> None: ...

    def renamed(self, run_id: str, name: str) -> None: ...

    def ended(self, run_id: str, t: float, status: str) -> None: ...

    def check_params(self, run_id: str, params: Any) -> None: ...

    def tracks_into(self, uri: str) -> bool: ...

    def exit_begins(self) -> None: ...


def patch_client(rec: RunReports, module: ModuleType) -> None:
    """Wrap ``module.TrackingServiceClient`` (``mlflow.tracking._tracking_service.client``)."""
    cls = module.TrackingServiceClient
    create, terminate, update = cls.create_run, cls.set_terminated, cls.update_run
    log_param, log_batch, set_tag = cls.log_param, cls.log_batch, cls.set_tag

    def create_run(client: Any, experiment_id: Any, start_time: Any = None, tags: Any = None,
                   run_name: Any = None) -> Any:
        run = create(client, experiment_id, start_time=start_time, tags=tags, run_name=run_name)
        try:
            # the span starts at the run's recorded start (MLflow stamps it before writing the
            # run), not when the store returns: 8-90 ms later, 6 % of a 1-s trial
            begun = run.info.start_time
            rec.started(run.info.run_id, str(client.tracking_uri), str(run.info.experiment_id),
                        run.info.run_name or "", (run.data.tags or {}).get(PARENT_TAG, ""),
                        t=begun / 1000 if isinstance(begun, int | float) and begun > 0 else None)
        except Exception:  # noqa: BLE001 - never into the script
            pass
        return run

    def set_terminated(client: Any, run_id: str, status: Any = None, end_time: Any = None) -> Any:
        # the span ends when the script ends the run, not when the store (busy, or a
        # server far away) has written it
        asked = end_time / 1000 if isinstance(end_time, int | float) else time.time()
        status = stopped_status(client, run_id, status)
        out = terminate(client, run_id, status=status, end_time=end_time)
        rec.ended(run_id, asked, str(status or "FINISHED"))
        return out

    def update_run(client: Any, run_id: str, status: Any = None, name: Any = None) -> Any:
        out = update(client, run_id, status=status, name=name)
        if name:
            rec.renamed(run_id, str(name))
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
                    rec.renamed(run_id, str(t.value))
        except Exception:  # noqa: BLE001 - never into the script
            pass
        return out

    def patched_set_tag(client: Any, run_id: str, key: Any, value: Any, *args: Any,
                        **kwargs: Any) -> Any:
        out = set_tag(client, run_id, key, value, *args, **kwargs)
        if key == RUN_NAME_TAG:
            rec.renamed(run_id, str(value))
        return out

    cls.create_run, cls.set_terminated, cls.update_run = create_run, set_terminated, update_run
    cls.log_param, cls.log_batch, cls.set_tag = patched_log_param, patched_log_batch, patched_set_tag


def stopped_status(client: Any, run_id: str, status: Any) -> Any:
    """The status to end a run with: the row's, tagged ``radtrack.stopped_by``, where the
    run ends FAILED or KILLED because radtrack is stopping the row (``--max-time``, Ctrl-C
    to the launcher: MLflow's ``with`` block saw the KeyboardInterrupt); else ``status``."""
    if str(status or "FINISHED") not in ("FAILED", "KILLED"):
        return status
    try:
        stop = handshake.stop_request()
        if stop is None or not stop.get("status"):
            return status
        from radtrack.vocab.schema import STOPPED_BY

        client.set_tag(run_id, STOPPED_BY, str(stop.get("stopped_by", "")))
        return str(stop["status"])
    except Exception:  # noqa: BLE001 - never into the script
        return status


def patch_fluent(rec: RunReports, module: ModuleType) -> None:
    """Wrap ``start_run``, ``end_run`` and ``_get_experiment_id`` of ``mlflow.tracking.fluent``."""
    start = module.start_run
    row_aside: dict[int, Any] = {}  # thread -> the row run's ActiveRun, set aside

    def start_run(*args: Any, **kwargs: Any) -> Any:
        try:
            aside = _set_row_aside(row_aside, module, args, kwargs)
        except Exception:  # noqa: BLE001 - an MLflow whose internals moved: as before
            aside = False
        try:
            active = start(*args, **kwargs)
        except BaseException:
            if aside:
                _take_row_back(row_aside, module)
            raise
        try:
            run_id = active.info.run_id
            if run_id not in rec.created:  # an existing run taken up again
                from mlflow.tracking import get_tracking_uri

                rec.resumed(run_id, get_tracking_uri(), str(active.info.experiment_id),
                            active.info.run_name or "", (active.data.tags or {}).get(PARENT_TAG, ""))
        except Exception:  # noqa: BLE001 - never into the script
            pass
        return active

    start_run.__doc__, start_run.__wrapped__ = start.__doc__, start  # type: ignore[attr-defined]
    module.start_run = start_run
    end = module.end_run

    def end_run(*args: Any, **kwargs: Any) -> Any:
        out = end(*args, **kwargs)
        if row_aside:
            _take_row_back(row_aside, module)
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

            if rec.tracks_into(get_tracking_uri()):
                row_experiment = handshake.wait_for(handshake.EXPERIMENT_ID)
                if row_experiment:
                    return row_experiment
        return default_experiment()

    module._get_experiment_id = _get_experiment_id
    # Exit handlers run last-registered first: this one runs just before MLflow's
    # own (registered when fluent was imported), so runs that handler ends are known.
    atexit.register(rec.exit_begins)


def _row_run_id() -> str | None:
    """The row run's id where it is known by now (never waits for it)."""
    row = os.environ.get(ROW_RUN_ENV)
    if row:
        return row
    folder = os.environ.get(handshake.ROW_DIR)
    return handshake.read(Path(folder)).get(handshake.RUN_ID) if folder else None


def _set_row_aside(row_aside: dict[int, Any], module: ModuleType, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> bool:
    """Before a ``start_run(*args, **kwargs)`` of the script's own: take the row run off
    MLflow's active-run stack (not ended) where it is the active run, True if so.

    RADTBenchmark makes the row run MLflow's active run (radtrack/script/benchmark.py) so
    that plain mlflow calls in its block land there; a new top-level run of the script's
    own in that block would meet "Run ... is already active". The row run is the active
    run again once the script's runs have all ended (:func:`_take_row_back`)."""
    wanted = kwargs.get("run_id", args[0] if args else None)
    nested = kwargs.get("nested", args[3] if len(args) > 3 else False)
    stack = module._active_run_stack.get()
    if nested or len(stack) != 1:
        return False
    row = _row_run_id()
    if row is None or stack[0].info.run_id != row or wanted == row:
        return False
    row_aside[threading.get_ident()] = stack.pop()
    return True


def _take_row_back(row_aside: dict[int, Any], module: ModuleType) -> None:
    stack = module._active_run_stack.get()
    if not stack and threading.get_ident() in row_aside:
        stack.append(row_aside.pop(threading.get_ident()))
