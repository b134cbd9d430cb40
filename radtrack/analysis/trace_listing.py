"""Which listeners' Parquet traces a run stored (``telemetry/<listener>.parquet``).

Every reader of a run's traces asks first (series, metric keys, summaries, co-location
accounting), and through MLflow a listing costs two run reads besides the folder's (30-40
ms on SQLite); one run's summary asked three times. So what the caller knows of the run
is used: a FINISHED run's listing is final and kept for the life of the process, and a
local artifact folder is listed directly.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse
from urllib.request import url2pathname

from radtrack.analysis.reader_client import reader_client
from radtrack.store.entities import refusals
from radtrack.store.tracking import resolve_uri
from radtrack.vocab.schema import TELEMETRY_DIR, TRACE_SUFFIX

if TYPE_CHECKING:
    from mlflow import MlflowClient

# Only a FINISHED run's artifacts are final: a RUNNING run has no trace yet, and a run a
# killed launcher left behind may still get its trace from ``radtrack sync``.
FINAL_STATUSES = frozenset({"FINISHED"})


def telemetry_listeners(run_id: str, tracking_uri: str | None = None,
                        client: MlflowClient | None = None, status: str | None = None,
                        artifact_uri: str | None = None) -> list[str]:
    """Names of the listeners with a Parquet trace in the run's artifacts, sorted.

    ``status`` and ``artifact_uri`` are the run's, where the caller has them: a FINISHED
    run's listing is kept, a local folder is listed without MLflow (module docstring).
    """
    client = client or reader_client(resolve_uri(tracking_uri))
    key = (client.tracking_uri, run_id)
    if status in FINAL_STATUSES:
        with _LISTENERS_LOCK:
            if key in _LISTENERS:
                _LISTENERS.move_to_end(key)
                return list(_LISTENERS[key])
    folder = local_folder(artifact_uri)
    try:
        if folder is not None:
            names = [e.name for e in os.scandir(folder / TELEMETRY_DIR) if e.is_file()]
        else:
            names = [Path(f.path).name for f in client.list_artifacts(run_id, TELEMETRY_DIR)
                     if not f.is_dir]
    except FileNotFoundError:
        names = []  # no trace was stored
    except (*refusals(), OSError):
        # A store whose artifact root is unreachable from here still has the metric history.
        return []
    found = sorted(name.removesuffix(TRACE_SUFFIX) for name in names if name.endswith(TRACE_SUFFIX))
    if status in FINAL_STATUSES:
        with _LISTENERS_LOCK:
            _LISTENERS[key] = tuple(found)
            while len(_LISTENERS) > _LISTENERS_KEPT:
                _LISTENERS.popitem(last=False)
    return found


def local_folder(artifact_uri: object) -> Path | None:
    """The folder of a local (``file:`` or plain path) artifact URI, else None."""
    if not isinstance(artifact_uri, str) or not artifact_uri:
        return None
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(url2pathname(parsed.path))
    if parsed.scheme == "" and artifact_uri.startswith("/"):
        return Path(artifact_uri)
    return None


#: FINISHED runs' trace listings, most recently used last
_LISTENERS: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
_LISTENERS_LOCK = threading.Lock()
_LISTENERS_KEPT = 20_000
