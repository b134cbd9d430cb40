"""RADTBenchmark: the script-side handle on the launcher's MLflow run.

Inside a script started by radtrack, ``with RADTBenchmark() as run:`` attaches to the
run the launcher created (its id comes through the row folder: script/handshake.py), or,
when the script has a run of its own active, logs to that one, and exposes every
``mlflow`` function as a method. Its metrics, params, tags and artifacts never call the
store from the script: they go into the row's spool (radtrack/script/records.py), which the
launcher ships, so a store that is away for any time neither stops nor slows the script.
Outside radtrack every call is a no-op returning None, and mlflow is not even imported, so
the script runs unchanged.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from radtrack.script import env, handshake
from radtrack.script.codewindows import WindowRecorder
from radtrack.script.params import MAX_PARAM_LEN
from radtrack.script.records import SCRIPT_SPOOL_ENV, ScriptLog

STOPPED_BY_TAG = "radtrack.stopped_by"


def _noop(*_: Any, **__: Any) -> None:
    return None


class RADTBenchmark:
    """Context manager attached to the launcher's run, or a no-op outside radtrack."""

    def __init__(self) -> None:
        self._run_id = os.environ.get(env.RUN_ID) or None
        # under radtrack the row run may not exist yet when the script starts: its id comes
        # through the row folder once the launcher has created it (script/handshake.py)
        self._row_dir = os.environ.get(handshake.ROW_DIR) or None
        self.max_epoch = _int_or_none(os.environ.get(env.MAX_EPOCH))
        max_time = os.environ.get(env.MAX_TIME)
        self.max_time_s = float(max_time) * 60 if max_time else None
        self.manual = os.environ.get(env.MANUAL) == "1"
        control = os.environ.get(env.CONTROL_DIR)
        self._control = Path(control) if control else None
        start = os.environ.get(env.START_TIME)
        self._t0 = float(start) if start else time.time()
        self._mlflow: Any = None
        spool = os.environ.get(SCRIPT_SPOOL_ENV)
        self._log = ScriptLog(Path(spool)) if spool and self.active else None
        windows = os.environ.get(env.WINDOWS_FILE)
        self._windows = WindowRecorder(Path(windows) if self.active and windows else None)

    @property
    def active(self) -> bool:
        return self._run_id is not None or self._row_dir is not None

    @property
    def run_id(self) -> str | None:
        """The row run's id (waits, the first time, until the launcher has created it)."""
        if self._run_id is None and self._row_dir is not None:
            self._run_id = handshake.wait_for(handshake.RUN_ID, Path(self._row_dir))
            if self._run_id is None and os.environ.get(SCRIPT_SPOOL_ENV) is None:
                print("[radtrack] RADTBenchmark: the launcher created no run (see its output); "
                      "metrics of this script are not logged", file=sys.stderr, flush=True)
                self._row_dir = None
        return self._run_id

    def __enter__(self) -> RADTBenchmark:
        if not self.active:
            return self
        self._entered = True
        if self._log is not None:  # values go through the spool; plain mlflow calls of the
            # script still land in the row run when the store answers: attached now where the
            # script imported MLflow already, else once it does. Importing MLflow here (and
            # waiting for the launcher to create the row run) held a script that never calls
            # MLflow itself for 3-4 s before its first step.
            if not self._attach_deferred:
                from radtrack.script import run_events

                self._attach_deferred = run_events.when_imported(
                    "mlflow", lambda _module: self._attach_quietly())
                if not self._attach_deferred:
                    self._attach_quietly()
        elif self.run_id is not None:
            import mlflow

            self._mlflow = mlflow
            if mlflow.active_run() is None:
                _attach(mlflow, self.run_id)
            # else the script's own run is active: ML metrics go there, next to the telemetry
            # radtrack binds to that run (docs/mlflow-code.md)
        if self.manual:
            self._t0 = time.time()
            self._signal("start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._windows.close_all()
        if self.active and self.manual:
            self._signal("stop")

    # Code windows: time and energy of regions (radtrack/script/codewindows.py) -----------------
    def window(self, name: str, step: int | None = None) -> Any:
        """``with run.window("epoch", step=e):`` records the region's wall-clock span; the
        launcher reports its duration, GPU energy (attributed on a shared GPU), power,
        utilisation and SM activity. Nestable; names and steps are checked even outside
        radtrack, where nothing is recorded."""
        return self._windows.window(name, step)

    def begin_window(self, name: str, step: int | None = None) -> None:
        self._windows.begin(name, step)

    def end_window(self, name: str, step: int | None = None) -> None:
        self._windows.end(name, step)

    def _signal(self, what: str) -> None:
        if self._control is not None:
            self._control.mkdir(parents=True, exist_ok=True)
            (self._control / what).write_text(repr(time.time()))

    def _attach_quietly(self) -> None:
        """Make the row run MLflow's active run for the script's plain ``mlflow`` calls when
        its id is known and the store answers; never raises, never waits for a store the
        launcher found away (the values of this handle are spooled either way)."""
        import mlflow

        self._mlflow = mlflow
        if mlflow.active_run() is not None:
            return  # the script's own run: its values go there (_target)
        run_id = self.run_id
        if run_id is None:
            return
        try:
            _attach(mlflow, run_id)
        except Exception as exc:  # noqa: BLE001 - the store is away: the script runs on
            print(f"[radtrack] RADTBenchmark: the tracking store did not answer ({type(exc).__name__}); "
                  "this script's RADTBenchmark values are spooled and stored once it is back",
                  file=sys.stderr, flush=True)

    def _target(self) -> str | None:
        """Where a value goes: the script's own active run (None: the row run)."""
        mlflow = self._mlflow or sys.modules.get("mlflow")
        if mlflow is None:
            return None
        try:
            run = mlflow.active_run()
        except Exception:  # noqa: BLE001
            return None
        if run is None or run.info.run_id == self._run_id:
            return None
        return run.info.run_id

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if not self.active:
            return _noop
        return getattr(self._mlflow_now(), name)

    def _mlflow_now(self) -> Any:
        """MLflow, for a call the spool does not take: the handle entered first (one used
        without ``with``), MLflow imported here where the row run's attach still waits for the
        script's own import of it."""
        if not self._entered:
            self.__enter__()
        if self._mlflow is None:
            import mlflow

            self._mlflow = mlflow
        return self._mlflow

    # Values through the spool (radtrack/script/records.py) --------------------------------
    def _spooling(self) -> bool:
        """Whether a value goes through the spool: under radtrack, unless the script pointed
        MLflow at a store of its own (its values go there directly, as MLflow sends them)."""
        if self._log is None:
            return False
        if not self._entered:
            self.__enter__()
        mlflow = self._mlflow or sys.modules.get("mlflow")
        if mlflow is not None:
            try:
                if mlflow.get_tracking_uri() != os.environ.get(env.TRACKING_URI, mlflow.get_tracking_uri()):
                    return False
            except Exception:  # noqa: BLE001 - an MLflow without it: the spool
                pass
        return True

    _entered = False
    _attach_deferred = False

    def log_param(self, key: str, value: Any) -> None:
        self.log_params({key: value})

    def log_params(self, params: dict[str, Any]) -> None:
        if not self.active:
            return None
        if self._spooling():
            target = self._target()
            for key, value in params.items():
                text = str(value)
                if len(text) > MAX_PARAM_LEN:  # as MLflow would store it, the rest kept aside
                    from radtrack.script.run_events import keep_param

                    keep_param(target or "", str(key), text)
                    text = text[:MAX_PARAM_LEN]
                self._log.param(target, key, text)
            return None
        return self.__getattr__("log_params")(params)

    def set_tag(self, key: str, value: Any) -> None:
        self.set_tags({key: value})

    def set_tags(self, tags: dict[str, Any]) -> None:
        if not self.active:
            return None
        if self._spooling():
            target = self._target()
            for key, value in tags.items():
                self._log.tag(target, key, value)
            return None
        return self.__getattr__("set_tags")(tags)

    def log_artifact(self, local_path: str, artifact_path: str | None = None) -> None:
        if not self.active:
            return None
        if self._spooling():
            self._log.artifact(self._target(), str(local_path), artifact_path)
            return None
        return self.__getattr__("log_artifact")(local_path, artifact_path)

    def log_artifacts(self, local_dir: str, artifact_path: str | None = None) -> None:
        if not self.active:
            return None
        if self._spooling():
            self._log.artifact(self._target(), str(local_dir), artifact_path)
            return None
        return self.__getattr__("log_artifacts")(local_dir, artifact_path)

    # ML metrics with epoch-aware stopping -------------------------------------------
    def log_metric(self, key: str, value: float, epoch: int | None = None,
                   step: int | None = None, **kwargs: Any) -> None:
        if not self.active:
            return None
        step = step if step is not None else epoch
        if self._spooling() and set(kwargs) <= {"timestamp"}:
            self._log.metric(self._target(), key, value, step, kwargs.get("timestamp"))
        else:
            self._mlflow_now().log_metric(key, value, step=step, **kwargs)
        self._check_limits(epoch)
        return None

    def log_metrics(self, metrics: dict[str, float], epoch: int | None = None,
                    step: int | None = None, **kwargs: Any) -> None:
        if not self.active:
            return None
        step = step if step is not None else epoch
        if self._spooling() and set(kwargs) <= {"timestamp"}:
            target = self._target()
            for key, value in metrics.items():
                self._log.metric(target, key, value, step, kwargs.get("timestamp"))
        else:
            self._mlflow_now().log_metrics(metrics, step=step, **kwargs)
        self._check_limits(epoch)
        return None

    def _check_limits(self, epoch: int | None) -> None:
        reason = None
        if self.max_epoch is not None and epoch is not None and epoch >= self.max_epoch:
            reason = "max_epoch"
        elif self.max_time_s is not None and time.time() - self._t0 >= self.max_time_s:
            reason = "max_time"
        if reason is None:
            return
        self.set_tag(STOPPED_BY_TAG, reason)
        if self.manual:
            self._signal("stop")
        raise SystemExit(0)


def _attach(mlflow: Any, run_id: str) -> None:
    """Make the launcher's row run the active run, whatever experiment the script chose
    with ``set_experiment`` (MLflow refuses to resume a run of another experiment then)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import fluent

    try:
        mlflow.start_run(run_id=run_id)
    except MlflowException:
        if getattr(fluent, "_active_experiment_id", None) is None:
            raise
        chosen, fluent._active_experiment_id = fluent._active_experiment_id, None
        try:
            mlflow.start_run(run_id=run_id)
        finally:
            fluent._active_experiment_id = chosen


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text not in (None, "") else None
