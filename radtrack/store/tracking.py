"""MLflow side of a launch: the up-front checks (reachable, credentials, write permission,
a database store's experiments); the clients are radtrack/store/handle.py's. The rest lives by capability and is
re-exported here: uris.py (URIs and passwords), identity.py (user, launch id, run names),
runs.py (experiments, tags, params, closing runs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.store import newstore, reach
from radtrack.store.identity import (
    LAUNCH_ID_ENV,
    TRACKING_USERNAME,
    create_workload_run,
    identity_tags,
    launch_id,
    launch_user,
    row_run_name,
    workload_run_name,
)
from radtrack.store.runs import (
    close_orphaned_parent,
    experiment_id,
    log_params,
    lookup_experiment,
    next_workload_number,
    row_params,
    row_tags,
    set_tags,
    slurm_tags,
    workload_tags,
)
from radtrack.store.uris import (
    DATABASE_SCHEMES,
    default_artifact_location,
    needs_store_checks,
    redact,
    resolve_uri,
    store_is_new,
    with_password,
    without_password,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

__all__ = [
    "DATABASE_SCHEMES", "LAUNCH_ID_ENV", "TRACKING_USERNAME", "check_credentials",
    "away_at_launch", "store_away", "check_database_experiments", "check_experiments", "check_reachable",
    "close_orphaned_parent", "create_workload_run", "default_artifact_location", "experiment_id",
    "identity_tags", "launch_id", "launch_user", "log_params", "lookup_experiment",
    "needs_store_checks", "next_workload_number", "redact", "resolve_uri", "row_params",
    "row_run_name", "row_tags", "set_tags", "slurm_tags", "store_is_new", "with_password",
    "without_password", "workload_run_name", "workload_tags",
]


_AWAY: list[str] = []  # why the tracking server did not answer at launch (run_anyway)


def away_at_launch() -> str:
    """Why the tracking server did not answer when this launch began ("" when it did)."""
    return _AWAY[0] if _AWAY else ""


def store_away(uri: str) -> str:
    """Why the store cannot answer a lookup now, asked without MLflow's retries: a server or
    database down when the launch began (:func:`check_reachable`), or a SQLite file another
    writer holds locked (reach.sqlite_busy); "" when it can."""
    return away_at_launch() or reach.sqlite_busy(uri)


def check_reachable(uri: str, timeout: float = 5.0, run_anyway: bool = False) -> None:
    """Fail fast (exit 2) on a tracking server that does not answer, before anything starts;
    with ``run_anyway`` (a local launch), a server that is down (the connection refused or
    timed out, not a host name that does not resolve) is said in one line and the launch
    goes on: its scripts run, everything spools, ``radtrack sync`` stores it later. A
    database store (PostgreSQL, MySQL, SQL Server) is asked the same way before MLflow
    opens it (radtrack/store/reach.py): one not listening is down; one that refuses the
    login (password, no such database) is refused in one line."""
    if reach.is_database(uri):
        why = reach.away(uri, timeout=min(timeout, reach.PROBE_TIMEOUT_S))
        if not why:
            why = reach.check_login(uri, timeout=min(timeout, reach.PROBE_TIMEOUT_S))
        if not why:
            newstore.prepare(uri)  # PostgreSQL: its tables made once, under a lock, if new
            return
        if run_anyway:
            _AWAY.append(why)
            print(f"[radtrack] tracking store {redact(uri)} does not answer ({why}): the "
                  "scripts run anyway and everything they record spools until it is back",
                  file=sys.stderr, flush=True)
            return
        raise RadtrackError(f"tracking store {redact(uri)} is unreachable: {why}")
    if not uri.startswith(("http://", "https://")):
        # a SQLite store: made now when new (whole, once: radtrack/store/newstore.py), before
        # any script can open it; a half-made, outdated or read-only one said in one line
        newstore.prepare(uri)
        return
    import urllib.error  # 7 ms: only where a server is asked

    from radtrack.store import credentials

    headers = credentials.plain(uri, plugins=False)  # a refusal asks about plugins
    # where urllib sends what MLflow's client would, one authenticated read answers both
    # questions before the scripts start (one round trip, not two): does the server answer,
    # and does it accept us; else /health, and MLflow's own client asks the second
    endpoint = "/health" if headers is None else credentials.SEARCH + "?max_results=1"
    try:
        answer = credentials.status(uri, endpoint, headers or {}, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if run_anyway and isinstance(reason, (ConnectionError, TimeoutError)):
            _AWAY.append(str(reason))
            print(f"[radtrack] tracking server {redact(uri)} does not answer ({reason}): the "
                  "scripts run anyway and everything they record spools until it is back",
                  file=sys.stderr, flush=True)
            return
        raise RadtrackError(f"tracking server {redact(uri)} is unreachable: {reason}") from None
    wrong = reach.judge(uri, endpoint, *answer)  # radtrack ui's port, a proxy's 404 or 502
    if wrong:
        raise RadtrackError(wrong)
    check_credentials(uri, headers, timeout, answer=None if headers is None else answer)


def check_credentials(uri: str, headers: dict[str, str] | None, timeout: float = 20.0,
                      answer: tuple[int, str] | None = None) -> None:
    """One authenticated read, with what MLflow's client would send (``headers``, from
    radtrack/store/credentials.py; None: only MLflow's own client can send it, so it asks):
    a server behind basic auth that refuses us is one message naming the variables to set.
    ``answer``: the (status, body) of that read where the caller made it already."""
    if headers is None:
        from mlflow.exceptions import MlflowException

        from radtrack.store.mlflow_client import mlflow_client

        try:
            mlflow_client(uri).search_experiments(max_results=1)
            return
        except MlflowException as exc:  # MLflow's exception says it in its code or its text
            code, text = str(getattr(exc, "error_code", "")), str(exc)
        unauthenticated = "UNAUTHENTICATED" in code or "401" in text
        denied = "PERMISSION_DENIED" in code or "403" in text
    else:
        from radtrack.store import credentials

        try:
            status, text = answer or credentials.status(uri, credentials.SEARCH + "?max_results=1",
                                                         headers, timeout)
        except OSError:
            return  # it answered a moment ago: anything else shows up where it matters
        # the status alone: an accepted answer's body holds timestamps with any digits in them
        unauthenticated, denied = status == 401, status == 403
        if (unauthenticated or denied) and credentials.header_plugins():
            return check_credentials(uri, None, timeout)  # a plugin's headers might be accepted
    if unauthenticated:
        user = os.environ.get(TRACKING_USERNAME)
        who = f"user {user!r} was refused" if user else "no credentials were given"
        raise RadtrackError(
            f"tracking server {redact(uri)} requires authentication and {who}: set "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN)"
        ) from None
    if denied:
        raise RadtrackError(f"tracking server {redact(uri)} refused user "
                            f"{os.environ.get('MLFLOW_TRACKING_USERNAME')!r}: {text[:200]}") from None
    # anything else (an old server without this endpoint, ...) shows up where it matters


def check_database_experiments(client: Callable[[], MlflowClient], uri: str,
                               experiments: list[str]) -> None:
    """With a database tracking URI (no server in between), a run's artifacts go where its
    experiment says. Refuse, before anything starts, an experiment that does not exist yet
    (MLflow would keep its artifacts in ./mlruns on this host, out of the team's sight) or
    whose artifacts only a tracking server can reach (``mlflow-artifacts:``)."""
    if not reach.is_database(uri):
        return
    c = client()
    for name in dict.fromkeys(experiments):
        exp = lookup_experiment(c, name)
        if exp is None:
            raise RadtrackError(
                f"experiment {name!r} does not exist in {redact(uri)}: with a database tracking URI "
                "radtrack does not create experiments (their artifacts would stay in ./mlruns on "
                "this host); create it once with an artifact location on a shared path "
                "(docs/deployment.md), or track through the team's mlflow server (http://...)")
        if exp.artifact_location.startswith("mlflow-artifacts:"):
            raise RadtrackError(
                f"experiment {name!r} keeps its artifacts behind the tracking server "
                f"({exp.artifact_location}), which a database tracking URI cannot reach: track "
                "through the server (http://...) or use an experiment on a shared path")


def check_experiments(client: Callable[[], MlflowClient], uri: str, experiments: list[str]) -> None:
    """Before anything starts: a database store's experiments (check_database_experiments)
    and, on a server with basic auth, the user's permission to write to each experiment
    (radtrack/store/permissions.py). ``client`` makes (or returns) the store's MLflow client,
    called only where a check needs MLflow: a server's checks go through urllib where they
    can (radtrack/store/credentials.py), so MLflow's import does not delay the scripts."""
    from radtrack.store import permissions
    from radtrack.store.outage import describe, is_outage

    if away_at_launch():
        return  # nothing to check against: the launch goes on, spooling (check_reachable)
    try:
        check_database_experiments(client, uri, experiments)
        if permissions.applies(uri):
            found = permissions.experiment_ids(uri, list(dict.fromkeys(experiments)), client)
            permissions.check_write_access(uri, redact(uri), found)
    except RadtrackError:
        raise
    except Exception as exc:
        if not is_outage(exc):
            raise
        # a store that is away before anything started: refused like an unreachable server
        raise RadtrackError(f"tracking store {redact(uri)} is unreachable: {describe(exc)}") from None


