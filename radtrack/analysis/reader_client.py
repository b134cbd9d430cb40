"""Which client radtrack's readers (radtrack/analysis/data.py, trace_listing.py) read a store with.

MLflow's own (``MlflowClient``), except inside :func:`reading_through`: there the launcher's
light client of the same store (radtrack/store/handle.py: a SQLite file, an ``mlflow
server``) answers the same calls, so that the end of a co-located workload, which reads its
stored runs and its scripts' solo baselines (radtrack/analysis/workload_runs.py), never
imports MLflow (about 2 CPU-s on a 2-core VM, issue 47). The readers' code stays one path
for both clients: the figures they compute are the same whichever answered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_LIGHT: ContextVar[Any] = ContextVar("radtrack_light_reader", default=None)


@contextlib.contextmanager
def reading_through(client: Any) -> Iterator[None]:
    """Readers in this context read ``client``'s store (its ``uri``) through ``client``."""
    token = _LIGHT.set(client)
    try:
        yield
    finally:
        _LIGHT.reset(token)


def reader_client(uri: str) -> Any:
    """The light client of :func:`reading_through` where it is ``uri``'s, else MLflow's."""
    light = _LIGHT.get()
    if light is not None and light.uri == uri:
        return light
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)
