"""The launcher's store handle: one object carries the tracking URI and its client.

The common path (a SQLite file, an MLflow tracking server) gets a light client that writes
MLflow's tables or speaks its REST API without importing MLflow (radtrack/store/light_sqlite.py,
light_rest.py): MLflow's import costs about 2 CPU-s on a 2-core VM and was most of the
launcher's own CPU over a short run and of its end (docs/performance.md, "Fixed cost per
run"). Anything else keeps MLflow's own client (radtrack/store/mlflow_client.py): other
databases, a server whose authentication only MLflow's client can send (a header plugin,
AWS SigV4, ~/.netrc), a SQLite schema the light client does not know, and
``RADTRACK_STORE_CLIENT=mlflow`` (an escape hatch, and the reference a benchmark compares
with). A light client hands what it does not do (artifacts outside the store's own place, a
search filter it does not read) to MLflow's client, made then.

Every client radtrack's writing side makes is made here (:class:`StoreHandle`,
:func:`client_for`) or, MLflow's own, by radtrack/store/mlflow_client.py, the one place
that changes the process environment for the store (MLflow's HTTP retry settings, set
before MLflow's first client, with the user's own kept for the scripts). The command
resolves the tracking URI once (radtrack/store/uris.py ``resolve_uri``) and hands it down.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

CLIENT_ENV = "RADTRACK_STORE_CLIENT"  # "mlflow": MLflow's own client everywhere


class StoreHandle:
    """A store's URI and radtrack's clients of it, each made on first use, then kept: the
    command makes one from the URI it resolved and hands it down (radtrack/cli.py ->
    radtrack/executor_contract.py ``Launch.store`` -> the executor)."""

    def __init__(self, uri: str):
        self.uri = uri
        self._client: Any = None
        self._mlflow: Any = None

    @property
    def client(self) -> Any:
        """The light client where it applies, else MLflow's (:func:`client_for`)."""
        if self._client is None:
            self._client = client_for(self.uri)
        return self._client

    @property
    def mlflow(self) -> Any:
        """MLflow's own client (radtrack/store/mlflow_client.py), for what only it does (the
        up-front checks of a database store, a server's permissions, a sheet's earlier runs);
        importing MLflow costs about 2 CPU-s, so only a caller that needs it asks."""
        if self._mlflow is None:
            from radtrack.store.mlflow_client import mlflow_client

            self._mlflow = mlflow_client(self.uri)
        return self._mlflow

    def anew(self) -> StoreHandle:
        """A handle of the same store whose clients are made again on first use: each
        workload of a launch opens the store anew (radtrack/run/experiment.py), so that a
        SQLite file replaced or deleted between workloads is written as it is now, never
        through a connection kept to the old file (radtrack/run/launch.py ``store_lost``)."""
        return StoreHandle(self.uri)

    @property
    def light(self) -> bool:
        """Whether the launcher writes this store without MLflow."""
        return bool(getattr(self.client, "light", False))


def light_client(uri: str) -> Any:
    """radtrack's own client of ``uri`` (SqliteClient, RestClient), or None where only
    MLflow's client will do."""
    if os.environ.get(CLIENT_ENV, "").strip().lower() == "mlflow":
        return None
    if uri.startswith("sqlite:///"):
        from radtrack.store import light_sqlite, newstore

        path = light_sqlite.database_path(uri)
        if path is None:
            return None
        # a new store is made whole first, as for MLflow's client (radtrack/store/newstore.py)
        newstore.prepare(uri)
        return light_sqlite.SqliteClient(uri, path) if light_sqlite.compatible(path) else None
    if uri.startswith(("http://", "https://")):
        from radtrack.store import credentials
        from radtrack.store.light_rest import RestClient

        headers = credentials.plain(uri)
        return None if headers is None else RestClient(uri, headers)
    return None


def client_for(uri: str) -> Any:
    """The light client where it applies, else MLflow's (radtrack/store/mlflow_client.py)."""
    light = light_client(uri)
    if light is not None:
        return light
    from radtrack.store.mlflow_client import mlflow_client

    return mlflow_client(uri)


def one_transaction(client: Any) -> contextlib.AbstractContextManager[Any]:
    """Where the client can (a SQLite store: SqliteClient.batch), every call inside is one
    transaction, one sync to disk; elsewhere each call stands alone, as before."""
    batch = getattr(client, "batch", None)
    return batch() if batch is not None else contextlib.nullcontext()
