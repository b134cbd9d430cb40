"""What radtrack's two light store clients share (radtrack/store/light_sqlite.py for a SQLite
file, light_rest.py for an ``mlflow server``): the URI under MlflowClient's name for it, and
MLflow's own client, made once and only when a call needs what the light client does not do
(importing MLflow costs about 2 CPU-s on a 2-core VM, which the launcher's path never pays)."""

from __future__ import annotations

from typing import Any


class LightClient:
    """Base of the light clients: ``uri`` is set by the subclass."""

    uri: str
    _mlflow: Any = None

    @property
    def tracking_uri(self) -> str:  # MlflowClient's name for it: radtrack's readers use it
        return self.uri

    def mlflow(self) -> Any:
        """MLflow's own client of the same store, for what the light client does not do."""
        if self._mlflow is None:
            from radtrack.store.mlflow_client import mlflow_client as client

            self._mlflow = client(self.uri)
        return self._mlflow
