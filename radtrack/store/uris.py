"""Tracking URIs: which store, its password kept out of messages and files, what kind it is."""

from __future__ import annotations

import os
from pathlib import Path

from radtrack.script import env


def resolve_uri(cli_uri: str | None = None) -> str:
    """--tracking-uri, else MLFLOW_TRACKING_URI, else sqlite:///mlflow.db (the embedded store)."""
    return cli_uri or os.environ.get(env.TRACKING_URI) or env.DEFAULT_TRACKING_URI


def default_artifact_location(uri: str) -> str | None:
    """Local SQLite stores keep artifacts in ./mlartifacts next to the database."""
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).absolute().parent / "mlartifacts").as_uri()
    return None


DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")  # MLflow SQL stores other than SQLite


def redact(uri: str) -> str:
    """``uri`` with any password replaced, for messages."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.password:
        return uri.replace(f":{parts.password}@", ":***@", 1)
    return uri


def without_password(uri: str) -> str:
    """``uri`` with its password left out (``postgresql://u@h/db``): what radtrack writes into
    files (SLURM job scripts, the job ledger); :func:`with_password` puts it back."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}@{host}"))


def with_password(uri: str) -> str:
    """A password-less ``uri`` (from a job script or ledger) with the password the environment
    holds: ``MLFLOW_TRACKING_URI`` when it names the same store (SLURM propagates the
    submitter's environment to its jobs). Otherwise ``uri`` as is: PostgreSQL then takes the
    password from ``PGPASSWORD`` or the 0600 file ``~/.pgpass`` / ``PGPASSFILE``."""
    full = os.environ.get(env.TRACKING_URI, "")
    if full and full != uri and without_password(full) == uri:
        return full
    return uri


def needs_store_checks(uri: str) -> bool:
    """Whether :func:`check_experiments` has anything to check before the launch: a
    tracking server with a basic-auth user (permissions: radtrack/store/permissions.py) or a
    database store (experiments' artifact locations). A SQLite or file store, or a server
    with no user to check, has nothing to check, so MLflow need not be imported before the
    scripts start (seconds on a GPU host)."""
    from radtrack.store.credentials import basic_auth_user

    return bool(basic_auth_user(uri)) or uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES


def store_is_new(uri: str) -> bool:
    """A SQLite store whose file does not exist yet. A launch makes it whole in its up-front
    check (tracking.check_reachable: radtrack/store/newstore.py), before any script can open
    it, so after that check this is False and no script waits for the store's tables."""
    if not uri.startswith("sqlite:///"):
        return False
    return not Path(uri.removeprefix("sqlite:///")).exists()
