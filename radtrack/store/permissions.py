"""Up front, on a tracking server with MLflow's basic-auth app: may this user write to the
experiments of the launch? A user with the server's default READ permission would otherwise
crash with a raw 403 from ``runs/create`` once the workload starts.

MLflow 3.x (``mlflow server --app-name basic-auth``) answers, for the calling user,
``GET /api/3.0/mlflow/users/current/permissions`` (``is_admin``) and
``GET /api/3.0/mlflow/users/permissions/get`` (the user's effective permission on one
experiment: READ, USE, EDIT, MANAGE, NO_PERMISSIONS, DENY). A server without the app
answers 404: nothing to check. An experiment that does not exist yet is created by the
launch, and its creator manages it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.store.uris import redact

if TYPE_CHECKING:
    from mlflow import MlflowClient

CURRENT = "/api/3.0/mlflow/users/current/permissions"
PERMISSION = "/api/3.0/mlflow/users/permissions/get"
WRITABLE = frozenset({"EDIT", "MANAGE"})  # the permissions whose can_update is true
GET_BY_NAME = "/api/2.0/mlflow/experiments/get-by-name"
GET_BY_ID = "/api/2.0/mlflow/experiments/get"


def grant_command(uri: str, user: str, experiment_id: str) -> str:
    """The admin's one-liner that grants ``user`` EDIT on the experiment (MLflow 3.x)."""
    return ("MLFLOW_TRACKING_USERNAME=ADMIN MLFLOW_TRACKING_PASSWORD=ADMIN_PASSWORD "
            "python -c \"from mlflow.server import get_app_client; "
            f"get_app_client('basic-auth', tracking_uri='{uri}').grant_user_permission("
            f"'{user}', 'experiment', '{experiment_id}', 'EDIT')\"")


def _get(uri: str, endpoint: str, params: dict[str, str] | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one GET, with what MLflow's client would send: through urllib
    where radtrack/store/credentials.py can reproduce it (no MLflow import before the
    scripts start), else through MLflow's own request code."""
    from radtrack.store import credentials

    headers = credentials.plain(uri)
    if headers is not None:
        from urllib.parse import urlencode

        query = f"?{urlencode(params)}" if params else ""
        status, text = credentials.status(uri, endpoint + query, headers, timeout=20, limit=None)
        try:
            body = json.loads(text) if text else {}
        except ValueError:  # an HTML 404 page from a server without the auth app
            body = {}
        return status, body if isinstance(body, dict) else {}
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    resp = http_request(get_default_host_creds(uri), endpoint, "GET", max_retries=1,
                        timeout=20, raise_on_status=False, params=params or {})
    try:
        body = resp.json() if resp.content else {}
    except ValueError:  # an HTML 404 page from a server without the auth app
        body = {}
    return resp.status_code, body if isinstance(body, dict) else {}


def experiment_ids(uri: str, names: list[str], client: Callable[[], MlflowClient]) -> dict[str, str]:
    """Name -> id of each experiment of ``names`` that exists (a name of digits that is no
    experiment's name: the experiment with that id, as the launch resolves it). Asked with
    :func:`_get` where it can, else with MLflow's ``client()``."""
    from radtrack.store import credentials

    if credentials.plain(uri) is None:
        from radtrack.store.runs import lookup_experiment

        found = {name: lookup_experiment(client(), name) for name in names}
        return {name: exp.experiment_id for name, exp in found.items() if exp is not None}
    out = {}
    for name in names:
        status, body = _get(uri, GET_BY_NAME, {"experiment_name": name})
        if status == 404 and name.isdigit():
            status, body = _get(uri, GET_BY_ID, {"experiment_id": name})
        if status == 200:
            out[name] = str(body["experiment"]["experiment_id"])
        elif status == 403:
            user = credentials.user_and_password()[0]
            raise RadtrackError(f"user {user!r} may not read experiment {name!r} on {redact(uri)}: "
                                "ask an admin to grant EDIT on it (docs/deployment.md, section 5)")
        elif status not in (400, 404):  # 404/400: no such experiment, the launch creates it
            raise RadtrackError(f"tracking server {redact(uri)} did not say whether experiment "
                                f"{name!r} exists ({status}: {str(body)[:200]})")
    return out


def experiment_permission(uri: str, user: str, experiment_id: str) -> str:
    """``user``'s effective permission on the experiment, as the server resolves it."""
    status, body = _get(uri, PERMISSION, {"username": user, "resource_type": "experiment",
                                          "resource_id": experiment_id})
    if status != 200:
        raise RadtrackError(f"tracking server {uri} did not say what user {user!r} may do in "
                            f"experiment {experiment_id} ({status}: {str(body)[:200]})")
    return str(body.get("permission", "")).upper()


def applies(uri: str) -> bool:
    """A server, and a basic-auth user to check (no user, or a token: the server decides);
    the user as MLflow's client takes it (its variable, else its credentials file)."""
    from radtrack.store.credentials import basic_auth_user

    return bool(basic_auth_user(uri))


def check_write_access(uri: str, shown_uri: str, experiments: dict[str, str]) -> None:
    """Refuse, with one line naming the experiment, the user and the admin's grant command,
    an existing experiment (name -> id; one the launch creates is its creator's) the user
    may not write to. ``shown_uri``: the URI as messages show it (no password)."""
    from radtrack.store.credentials import basic_auth_user

    user = basic_auth_user(uri)
    if not user:
        return
    status, body = _get(uri, CURRENT)
    if status != 200 or body.get("is_admin"):
        return  # no basic-auth app on this server (404), or an admin: may write anywhere
    for name, experiment_id in experiments.items():
        permission = experiment_permission(uri, user, experiment_id)
        if permission not in WRITABLE:
            raise RadtrackError(
                f"user {user!r} may not write to experiment {name!r} (id {experiment_id}, "
                f"permission {permission or 'none'}) on {shown_uri}: ask an admin to grant "
                f"EDIT: {grant_command(shown_uri, user, experiment_id)} "
                "(docs/deployment.md, section 5)")
