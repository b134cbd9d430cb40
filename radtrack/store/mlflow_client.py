"""MLflow's own client, as radtrack's processes make it, and the one place radtrack changes
the process environment for the store (radtrack/store/handle.py hands the clients out).

MLflow (3.x) reads its HTTP retry settings only from the environment
(``mlflow.environment_variables``): :func:`mlflow_client` sets short ones for radtrack's
own process before its first client, where the user set none; :func:`script_http_env`
gives a script's process the user's own, else long ones, from the environment as it was
before (taken when this module is imported, which every setter here follows).
:func:`radtrack_process`, :func:`quiet_downloads` and :func:`bound_requests` are the
commands' other MLflow settings (the readers' included). No other module of radtrack sets
an ``MLFLOW_*`` variable (tests/run/test_store_handle.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow import MlflowClient


# MLflow's own HTTP retry settings (mlflow.environment_variables), as the user's environment
# had them before this process changed them for the launcher's client
HTTP_RETRY_ENV = ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
                  "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "MLFLOW_HTTP_REQUEST_TIMEOUT")
_USER_HTTP_ENV = {k: os.environ.get(k) for k in HTTP_RETRY_ENV}
# For the script's process: retries at once, then after 4, 8, 16 and 32 s (urllib3's
# exponential backoff, plus up to 1 s of jitter each): a plain ``mlflow`` call rides out a
# tracking-server restart of about a minute, then raises as MLflow does (docs/mlflow-code.md).
SCRIPT_HTTP_RETRY = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "5",
                     "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
                     "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "1",
                     "MLFLOW_HTTP_REQUEST_TIMEOUT": "120"}


def radtrack_process() -> None:
    """MLflow's settings for radtrack's own processes (the launcher, a SLURM job's launcher,
    the subcommands), set once at the command's entry where the user set none: no usage
    telemetry from radtrack's MLflow calls (the scripts inherit it, as before)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def quiet_downloads(*, force: bool = False) -> None:
    """No MLflow progress bar per artifact (``radtrack copy`` says a line per run instead),
    unless the user asked for one; ``force``: none at all (``radtrack report``, whose output
    is the report only)."""
    if force:
        os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    else:
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def bound_requests(timeout_s: str, retries: str) -> None:
    """MLflow's HTTP request limits for a reader that must not hang on a server gone away
    (the page: radtrack/frontend/health.py), unless the user set their own."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", timeout_s)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", retries)


def script_http_env() -> dict[str, str]:
    """MLflow's HTTP retry settings for a script's process: the user's own where set, else
    SCRIPT_HTTP_RETRY (never the launcher's short ones)."""
    return {k: _USER_HTTP_ENV[k] or v for k, v in SCRIPT_HTTP_RETRY.items()}


def mlflow_client(uri: str) -> MlflowClient:
    """MLflow's own client of ``uri``, as radtrack's processes use it: the only place
    radtrack makes one for writing, and the only place it sets the environment for the
    store. MLflow (3.x) reads its HTTP retry settings only from the environment
    (``mlflow.environment_variables``), so they are set here, once, before the first
    client: short (2 retries, 20 s a request; the user's own values win), because the sink
    retries on its own schedule and keeps everything spooled meanwhile, and a long blocking
    retry inside MLflow gains nothing. The scripts get their own, longer ones
    (:func:`script_http_env`, from the user's values as they were before this)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    from radtrack.store import newstore

    # a new SQLite store is made whole before MLflow opens it (MLflow would make its tables
    # in place, racing any other process opening it: radtrack/store/newstore.py)
    newstore.prepare(uri)
    from mlflow import MlflowClient

    _store_errors_to_file()
    c = MlflowClient(tracking_uri=uri)
    # MLflow prints "View run ... / View experiment ..." on every set_terminated against a
    # server: a launch of many rows would print them per run. Not in this process (the
    # scripts' own runs keep MLflow's behaviour: no environment variable is set for them).
    inner = getattr(c, "_tracking_client", None)
    if inner is not None and hasattr(inner, "_log_url"):
        inner._log_url = lambda run_id: None
    return c


STORE_ERRORS_LOG = "store-errors.log"  # under $RADTRACK_HOME: MLflow's own store errors
_ROUTED: list[str] = []


def store_errors_log() -> Path:
    """Where this process keeps MLflow's own store errors (their tracebacks)."""
    from radtrack.script.env import radtrack_home

    return radtrack_home() / STORE_ERRORS_LOG


def _store_errors_to_file() -> None:
    """MLflow logs every failed SQL session with its traceback (``mlflow.store.db.utils``):
    a store that goes read-only or away would fill the terminal with them. In radtrack's own
    processes (the launcher, sync) they go to :func:`store_errors_log` instead; radtrack says
    in one line what failed and where the data is kept. The scripts keep MLflow's behaviour."""
    import logging

    if _ROUTED:
        return
    _ROUTED.append("done")
    logger = logging.getLogger("mlflow.store.db.utils")
    try:
        path = store_errors_log()
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, delay=True, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError:
        handler = logging.NullHandler()  # nowhere to keep them: radtrack's own line says it
    logger.addHandler(handler)
    logger.propagate = False
