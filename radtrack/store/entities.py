"""The store's records as the launcher writes and reads them, without importing MLflow.

``Metric``, ``Param`` and ``RunTag`` carry the attributes ``MlflowClient.log_batch`` reads
(it rebuilds each metric from ``key, value, timestamp, step, dataset_name, dataset_digest,
model_id, run_id``; a REST store asks params and tags for ``to_proto()``), so the same
values go to radtrack's light clients (radtrack/store/light_sqlite.py, light_rest.py) and,
on the fallback path, to MLflow's own client. ``Run``, ``RunInfo``, ``RunData`` and
``Experiment`` hold the fields radtrack reads from what a light client returns, under
MLflow's attribute names. Importing MLflow costs about 2 CPU-s on a 2-core VM
(docs/performance.md): the launcher's common path must not pay it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Metric(NamedTuple):
    key: str
    value: float
    timestamp: int
    step: int = 0

    # what MlflowClient.log_batch reads besides the four: none of radtrack's metrics has them
    dataset_name = None
    dataset_digest = None
    model_id = None
    run_id = None


class Param(NamedTuple):
    key: str
    value: str

    def to_proto(self) -> Any:
        from mlflow.entities import Param as MlflowParam  # only on MLflow's own REST path

        return MlflowParam(self.key, self.value).to_proto()


class RunTag(NamedTuple):
    key: str
    value: str

    def to_proto(self) -> Any:
        from mlflow.entities import RunTag as MlflowRunTag  # only on MLflow's own REST path

        return MlflowRunTag(self.key, self.value).to_proto()


@dataclass
class RunInfo:
    run_id: str
    run_name: str
    experiment_id: str
    user_id: str
    status: str
    start_time: int | None
    end_time: int | None
    artifact_uri: str
    lifecycle_stage: str = "active"

    @property
    def run_uuid(self) -> str:
        return self.run_id


@dataclass
class RunData:
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class Run:
    info: RunInfo
    data: RunData


@dataclass
class Experiment:
    experiment_id: str
    name: str
    artifact_location: str
    lifecycle_stage: str = "active"
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FileInfo:
    """An artifact as MLflow lists it: its path under the run's artifacts, folder or file."""

    path: str
    is_dir: bool
    file_size: int | None = None


class Page(list):  # type: ignore[type-arg]
    """One page of a search, as MLflow's PagedList: the items and the next page's token
    (None on the last page)."""

    def __init__(self, items: Any = (), token: str | None = None):
        super().__init__(items)
        self.token = token


class StoreError(Exception):
    """The store refused a call (a bad value, a missing run, ...), with MLflow's error code
    where it gave one (``RESOURCE_DOES_NOT_EXIST``, ``INVALID_PARAMETER_VALUE``, ...)."""

    def __init__(self, message: str, error_code: str = "INTERNAL_ERROR"):
        super().__init__(message)
        self.error_code = error_code


def refusals() -> tuple[type[Exception], ...]:
    """The exceptions a store's refusal comes as: StoreError (a light client), and MLflow's
    MlflowException where MLflow is loaded (its client answered); MLflow is not imported here."""
    import sys

    mod = sys.modules.get("mlflow.exceptions")
    return (StoreError, mod.MlflowException) if mod is not None else (StoreError,)
