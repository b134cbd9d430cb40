"""Metric writes to an MLflow tracking server (``http(s)://``): several log_batch calls at once.

One ``log_batch`` call is a round trip in which the server parses, validates and stores up
to 1000 points; one call at a time leaves the server idle while the request and response
travel and the client waits. The sink therefore keeps a few calls in flight (a process-wide
pool, ``RADTRACK_SHIP_CONCURRENCY`` calls, default 4, shared by every run the launcher
ships), and builds the request body of MLflow's REST API (``POST
/api/2.0/mlflow/runs/log-batch``) straight from the spooled points, sent through MLflow's
own ``http_request`` (its authentication, TLS and retry settings: MLFLOW_TRACKING_USERNAME /
PASSWORD / TOKEN, MLFLOW_TRACKING_INSECURE_TLS, ...) instead of building a protobuf
message per point; with the launcher's light client (radtrack/store/light_rest.py) the
same body goes through its urllib request, without MLflow. Exactly-once is unchanged: the sink advances a stream's ``.shipped``
count only over its calls in order, and MLflow's metric primary key makes a resent point a
no-op. A store that is not a REST server (or an MLflow whose internals moved) gets plain
``MlflowClient.log_batch`` calls, one at a time.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)

CONCURRENCY_ENV = "RADTRACK_SHIP_CONCURRENCY"
DEFAULT_CONCURRENCY = 4
LOG_BATCH_ENDPOINT = "/api/2.0/mlflow/runs/log-batch"
MAX_PER_CALL = 1000

Point = tuple[str, float, int, int]  # key, value, timestamp ms, step


class NotSent(Exception):
    """A call skipped because an earlier call of the same round failed (nothing was sent)."""


_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def concurrency() -> int:
    """Calls in flight per launcher process: ``$RADTRACK_SHIP_CONCURRENCY`` (>= 1), else 4."""
    raw = os.environ.get(CONCURRENCY_ENV, "")
    try:
        return max(1, int(raw)) if raw else DEFAULT_CONCURRENCY
    except ValueError:
        log.warning("radtrack: %s=%r is not a whole number; using %d", CONCURRENCY_ENV, raw,
                    DEFAULT_CONCURRENCY)
        return DEFAULT_CONCURRENCY


def _shared_pool() -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None:
            _pool_size = concurrency()
            _pool = ThreadPoolExecutor(_pool_size, thread_name_prefix="radtrack-ship")
        return _pool


class RestMetricWriter:
    """log_batch calls for one run; ``log_many`` runs them on the shared pool."""

    def __init__(self, client: Any):
        self.client = client
        self._creds: Any = None
        self._light: Any = None
        if getattr(client, "light", False):
            # radtrack's light server client (radtrack/store/light_rest.py): its own requests
            self._light = client if hasattr(client, "base") else None
            return
        try:
            from mlflow.store.tracking.rest_store import RestStore
            from mlflow.utils.rest_utils import http_request, verify_rest_response

            store = client._tracking_client.store
            if isinstance(store, RestStore):
                self._creds = store.get_host_creds
                self._http, self._verify = http_request, verify_rest_response
        except Exception as exc:  # not a REST store, or MLflow moved its internals
            log.debug("radtrack: direct REST log_batch off: %s", exc)

    @property
    def concurrent(self) -> bool:
        """True against a tracking server: calls then go out several at a time."""
        return self._creds is not None or self._light is not None

    def log_metrics(self, run_id: str, points: list[Point]) -> None:
        """Store up to 1000 (key, value, timestamp ms, step) points in one call."""
        if not points:  # samples without values: nothing to send
            return
        if self._light is not None:
            self._light.log_metrics(run_id, points)
            return
        if self._creds is None:
            from radtrack.store.entities import Metric

            self.client.log_batch(run_id, metrics=[Metric(*p) for p in points])
            return
        body = {"run_id": run_id,
                "metrics": [{"key": k, "value": _json_number(v), "timestamp": t, "step": s}
                            for k, v, t, s in points]}
        response = self._http(self._creds(), LOG_BATCH_ENDPOINT, "POST", json=body)
        self._verify(response, LOG_BATCH_ENDPOINT)

    def log_many(self, run_id: str, batches: list[list[Point]]) -> list[Exception | None]:
        """One call per batch, several in flight against a server; the outcome of each batch
        in order (None: stored). After a failure, calls not started yet are not sent
        (``NotSent``): a store that went away is not hammered with the rest of the round."""
        if not self.concurrent or len(batches) == 1:
            out: list[Exception | None] = []
            for points in batches:
                if out and out[-1] is not None:
                    out.append(NotSent("an earlier call failed"))
                    continue
                try:
                    self.log_metrics(run_id, points)
                    out.append(None)
                except Exception as exc:
                    out.append(exc)
            return out
        failed = threading.Event()

        def call(points: list[Point]) -> None:
            if failed.is_set():
                raise NotSent("an earlier call failed")
            try:
                self.log_metrics(run_id, points)
            except Exception:
                failed.set()
                raise

        futures: list[Future[None]] = [_shared_pool().submit(call, p) for p in batches]
        return [f.exception() for f in futures]


def _json_number(v: float) -> float | str:
    """Values as MLflow's JSON mapping of a double: non-finite ones as "NaN"/"Infinity"."""
    if math.isfinite(v):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
