"""Data access for analysis and the frontend: runs, metric series and Parquet telemetry.

Everything here returns tidy pandas frames read from MLflow (runs, params, tags, metric
history) and from the full-resolution Parquet traces the launcher stores as
``telemetry/<listener>.parquet`` artifacts (docs/architecture.md). Parquet is preferred
for listener metrics because it is complete and fast; the script's own metrics (loss,
``throughput_*``) only exist in MLflow's metric history.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow.parquet as pq

from radtrack.analysis.reader_client import reader_client
from radtrack.analysis.run_records import records, records_frame, run_row
from radtrack.analysis.trace_listing import FINAL_STATUSES, local_folder, telemetry_listeners
from radtrack.atomic import replacing
from radtrack.errors import RadtrackError
from radtrack.store.entities import refusals
from radtrack.store.tracking import lookup_experiment, resolve_uri
from radtrack.vocab import schema
from radtrack.vocab.schema import SUMMARY_PREFIX, canonical_key, stored_keys

if TYPE_CHECKING:  # MLflow is imported where its client reads (reader_client), not here
    from mlflow import MlflowClient
    from mlflow.entities import Experiment, Run

CACHE_ENV = "RADTRACK_CACHE_DIR"

ROLE_TAG = schema.ROLE

SERIES_COLUMNS = ["run_id", "metric", "seconds", "time", "step", "value"]


def resolve_tracking_uri(tracking_uri: str | None = None) -> str:
    """The tracking URI to use: the argument, else ``MLFLOW_TRACKING_URI``, else the default."""
    return resolve_uri(tracking_uri)


def missing_store(uri: str) -> str | None:
    """Why a reader cannot open ``uri``: a SQLite file or a local file store that does not
    exist (MLflow would create an empty one there), or a URI that answers HTTP but is no
    MLflow server; None otherwise."""
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
    elif uri.startswith("file:") or "://" not in uri:
        path = Path(uri.removeprefix("file://").removeprefix("file:"))
    else:
        return _not_mlflow(uri)
    if str(path) in ("", ":memory:") or path.exists():
        return None
    return (f"tracking store {uri}: {path.absolute()} does not exist "
            "(pass --tracking-uri or set MLFLOW_TRACKING_URI)")


def _not_mlflow(uri: str) -> str | None:
    """A server that answers HTTP but not as MLflow (radtrack/store/reach.py), in one line."""
    from radtrack.store.reach import not_mlflow

    return not_mlflow(uri) or None


def client_for(tracking_uri: str | None = None) -> MlflowClient:
    """The readers' client; a store that does not exist is refused, never created
    (RadtrackError: ``radtrack report``, ``export`` and ``ui`` only read). MLflow's client,
    or the launcher's light one at a workload's end (radtrack/analysis/reader_client.py)."""
    uri = resolve_tracking_uri(tracking_uri)
    problem = missing_store(uri)
    if problem:
        raise RadtrackError(problem)
    return reader_client(uri)


def find_experiment(client: MlflowClient, experiment: str) -> Experiment:
    """The experiment called ``experiment``, or with that id; RadtrackError when neither exists."""
    found = lookup_experiment(client, experiment)
    if found is None:
        from mlflow.entities import ViewType

        names = sorted(e.name for e in client.search_experiments(view_type=ViewType.ALL))
        hint = f" (known: {', '.join(names)})" if names else " (the store has no experiments)"
        raise RadtrackError(
            f"experiment {experiment!r} not found in {client.tracking_uri}{hint}")
    return found


def get_runs(client: MlflowClient, run_ids: Iterable[str]) -> list[Run]:
    """Fetch runs by id; RadtrackError naming the first id that does not exist."""
    runs = []
    for run_id in run_ids:
        try:
            runs.append(client.get_run(run_id))
        except refusals() as exc:
            raise RadtrackError(
                f"run {run_id!r} not found in {client.tracking_uri}") from exc
    return runs


def _search_all(client: MlflowClient, experiment_ids: list[str]) -> list[Run]:
    runs: list[Run] = []
    token = None
    while True:
        page = client.search_runs(experiment_ids, max_results=1000, page_token=token,
                                  order_by=["attributes.start_time ASC"])
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def load_runs(experiment: str | Experiment | None = None, workload: int | str | None = None,
              run_ids: list[str] | None = None, tracking_uri: str | None = None,
              include_parents: bool = False) -> pd.DataFrame:
    """One row per run: identity, timing, placement, then ``param.*``, ``tag.*``, ``metric.*``.

    ``experiment`` is a name or an id (None = every experiment), or the experiment itself.
    Parent (workload) runs are left out unless ``include_parents``; explicit ``run_ids``
    are always returned. ``metric.*`` columns hold each metric's latest value, i.e. the
    summary metrics. Rows are sorted by start time, then workload and letter.
    """
    return records_frame(load_run_records(experiment, workload, run_ids, tracking_uri,
                                          include_parents))


def load_run_records(experiment: str | Experiment | None = None,
                     workload: int | str | None = None, run_ids: list[str] | None = None,
                     tracking_uri: str | None = None, include_parents: bool = False
                     ) -> list[dict[str, object]]:
    """:func:`load_runs` as its rows' dicts (``to_dict("records")``), without a frame
    (radtrack/analysis/run_records.py)."""
    client = client_for(tracking_uri)
    names: dict[str, str] = {}
    if run_ids is not None:
        runs = get_runs(client, run_ids)
    else:
        if experiment is not None:
            found = (experiment if not isinstance(experiment, str | int)
                     else find_experiment(client, str(experiment)))
            names[found.experiment_id] = found.name
            exp_ids = [found.experiment_id]
        else:
            exp_ids = [e.experiment_id for e in client.search_experiments()]
        runs = _search_all(client, exp_ids) if exp_ids else []
        if not include_parents:
            runs = [r for r in runs if r.data.tags.get(ROLE_TAG) != schema.ROLE_WORKLOAD]
    if workload is not None:
        wanted = str(workload).strip()
        runs = [r for r in runs if r.data.tags.get(schema.WORKLOAD) == wanted]
    rows = []
    for run in runs:
        exp_id = run.info.experiment_id
        if exp_id not in names:
            names[exp_id] = client.get_experiment(exp_id).name
        rows.append(run_row(run, names[exp_id]))
    return records(rows)


# Telemetry ------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Where downloaded telemetry is kept: ``$RADTRACK_CACHE_DIR`` or a per-user temp folder."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    user = hashlib.sha1(str(Path.home()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"radtrack-cache-{user}"


def telemetry_path(run_id: str, listener: str, tracking_uri: str | None = None,
                   client: MlflowClient | None = None, status: str | None = None,
                   artifact_uri: str | None = None) -> Path:
    """Local path of ``telemetry/<listener>.parquet``, downloaded once for FINISHED runs.

    ``status`` (the run's, when the caller already has it) saves a round trip;
    ``artifact_uri`` (the run's) lets a trace in a local artifact folder be copied without
    MLflow's download, whose run and logged-model look-ups cost about 10x the copy of a
    2-3 MB trace (the page's summary reads several per run: docs/performance.md).
    """
    artifact = schema.trace_artifact(listener)
    folder = local_folder(artifact_uri)
    own = folder / artifact if folder is not None and status is not None else None
    if own is not None and not own.is_file():
        own = None  # not where the URI says: MLflow's download says why
    if own is None:
        client = client or client_for(tracking_uri)
        if status is None:
            status = get_runs(client, [run_id])[0].info.status
    cached = cache_dir() / run_id / artifact
    if status in FINAL_STATUSES and cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="download-", dir=cached.parent))
    # Readers in other processes (the frontend) must never see a half-written file: it is
    # made beside the cache's and renamed over it (radtrack/atomic.py; not fsync'd: a cache
    # a crash loses is downloaded again). MLflow downloads into a folder of its own.
    try:
        with replacing(cached, durable=False) as made:
            try:
                if own is not None:
                    shutil.copyfile(own, made)
                else:
                    local = client.download_artifacts(run_id, artifact, str(staging))  # type: ignore[union-attr]
                    shutil.move(local, made)
            except (*refusals(), OSError) as exc:
                raise RadtrackError(
                    f"run {run_id}: no telemetry artifact {artifact!r} ({exc})") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return cached


def read_telemetry(run_id: str, listener: str, tracking_uri: str | None = None,
                   client: MlflowClient | None = None, status: str | None = None,
                   columns: Iterable[str] | None = None, artifact_uri: str | None = None) -> pd.DataFrame:
    """The wide Parquet trace of one listener: ``time`` (unix s), ``step``, one column per key.

    ``columns`` limits the metric columns read (``time`` and ``step`` always come along;
    names the trace lacks are left out); ``status`` and ``artifact_uri``: as for
    :func:`telemetry_path`.
    """
    path = telemetry_path(run_id, listener, tracking_uri, client, status, artifact_uri)
    if columns is None:
        frame = pd.read_parquet(path)
    else:
        names = pq.read_schema(path).names
        wanted = set(columns) | {"time", "step"}
        frame = pd.read_parquet(path, columns=[n for n in names if n in wanted])
    if "time" not in frame.columns:
        raise RadtrackError(f"run {run_id}: telemetry/{listener}.parquet has no 'time' column")
    return frame


def _telemetry_keys(run: Run, listener: str, client: MlflowClient) -> list[str]:
    schema = pq.read_schema(telemetry_path(run.info.run_id, listener, client=client,
                                           status=run.info.status, artifact_uri=run.info.artifact_uri))
    return [n for n in schema.names if n not in ("time", "step")]


# Metric series --------------------------------------------------------------------------

def list_metrics(run_ids: list[str], tracking_uri: str | None = None,
                 include_summary: bool = False) -> list[str]:
    """Metric keys present for these runs (telemetry columns and logged metrics), sorted."""
    client = client_for(tracking_uri)
    keys: set[str] = set()
    for run in get_runs(client, run_ids):
        keys.update(canonical_key(k) for k in run.data.metrics)
        for listener in telemetry_listeners(run.info.run_id, client=client,
                                            status=run.info.status,
                                            artifact_uri=run.info.artifact_uri):
            keys.update(_telemetry_keys(run, listener, client))
    if not include_summary:
        keys = {k for k in keys if not k.startswith(SUMMARY_PREFIX)}
    return sorted(keys)


def load_series(run_ids: list[str], metrics: list[str] | None = None,
                tracking_uri: str | None = None) -> pd.DataFrame:
    """Long-format series: run_id, metric, seconds (since run start), time (UTC), step, value.

    Listener metrics come from the Parquet traces when a run has them, every other metric
    from MLflow's metric history. ``metrics=None`` loads every key except ``summary/*``.
    RadtrackError when a requested metric exists in none of the runs.
    """
    client = client_for(tracking_uri)
    runs = get_runs(client, run_ids)
    wanted = None if metrics is None else list(dict.fromkeys(metrics))
    parts: list[pd.DataFrame] = []
    seen: set[str] = set()
    for run in runs:
        frame = _run_series(client, run, wanted)
        seen.update(frame["metric"].unique())
        parts.append(frame)
    if wanted is not None:
        missing = [m for m in wanted if m not in seen]
        if missing:
            raise RadtrackError(
                f"unknown metric {', '.join(repr(m) for m in missing)} for run "
                f"{', '.join(run_ids)}; see radtrack.analysis.list_metrics")
    if not parts:
        return _empty_series()
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["run_id", "metric", "time", "step"], kind="stable").reset_index(drop=True)


def _empty_series() -> pd.DataFrame:
    return pd.DataFrame({
        "run_id": pd.Series(dtype=str), "metric": pd.Series(dtype=str),
        "seconds": pd.Series(dtype=float), "time": pd.Series(dtype=pd.DatetimeTZDtype(tz="UTC")),
        "step": pd.Series(dtype="int64"), "value": pd.Series(dtype=float),
    })


def _run_series(client: MlflowClient, run: Run, wanted: list[str] | None) -> pd.DataFrame:
    run_id = run.info.run_id
    start_s = run.info.start_time / 1000.0
    parts: list[pd.DataFrame] = []
    from_parquet: set[str] = set()
    # A listener's keys start with its name (docs/architecture.md): traces of other
    # listeners need not even be listed or downloaded.
    prefixes = None if wanted is None else {schema.trace_of(k) for k in wanted if "/" in k}
    listed = (telemetry_listeners(run_id, client=client, status=run.info.status,
                                  artifact_uri=run.info.artifact_uri)
              if prefixes != set() else [])
    listeners = [name for name in listed
                 if prefixes is None or name in prefixes]
    for listener in listeners:
        path = telemetry_path(run_id, listener, client=client, status=run.info.status,
                              artifact_uri=run.info.artifact_uri)
        names = pq.read_schema(path).names
        keys = [c for c in names if c not in ("time", "step")
                and c not in from_parquet and (wanted is None or c in wanted)]
        if not keys:
            continue
        if "time" not in names:
            raise RadtrackError(f"run {run_id}: telemetry/{listener}.parquet has no 'time' column")
        # Only the columns asked for: a trace holds every key of its listener.
        wide = pd.read_parquet(path, columns=["time", *(["step"] if "step" in names else []), *keys])
        from_parquet.update(keys)
        step = wide["step"] if "step" in wide.columns else pd.Series(range(len(wide)))
        long = (wide.assign(step=step.astype("int64"))[["time", "step", *keys]]
                .melt(id_vars=["time", "step"], var_name="metric", value_name="value")
                .dropna(subset=["value"]))
        parts.append(long)
    stored = stored_keys(run.data.metrics)  # canonical key -> key as stored in MLflow
    history_keys = [k for k in stored
                    if k not in from_parquet and not k.startswith(SUMMARY_PREFIX)
                    and (wanted is None or k in wanted)]
    if wanted is not None:
        # A summary metric asked for by name is still a (one-point) series.
        history_keys += [k for k in wanted if k.startswith(SUMMARY_PREFIX) and k in stored]
    parts += [part for key in history_keys if (part := _history(client, run_id, key, stored[key])) is not None]
    return _series_frame(parts, run_id, start_s)


def metric_history(run_id: str, keys: list[str], start_s: float,
                   tracking_uri: str | None = None) -> pd.DataFrame:
    """:func:`load_series`'s frame of ``keys`` read from MLflow's metric history alone, for
    keys stored under their own name (a script's metrics: no ``/``, never ``system/``-
    prefixed), without reading the run first (``load_series`` does, to map each name to
    its stored form: all its metrics, params and tags); ``start_s`` is the run's start."""
    client = client_for(tracking_uri)
    parts = [part for key in dict.fromkeys(keys) if (part := _history(client, run_id, key, key)) is not None]
    return _series_frame(parts, run_id, start_s)


def _history(client: MlflowClient, run_id: str, key: str, stored: str) -> pd.DataFrame | None:
    history = client.get_metric_history(run_id, stored)
    if not history:
        return None
    return pd.DataFrame({"time": [m.timestamp / 1000.0 for m in history], "step": [m.step for m in history],
                         "metric": key, "value": [m.value for m in history]})


def _series_frame(parts: list[pd.DataFrame], run_id: str, start_s: float) -> pd.DataFrame:
    if not parts:
        return _empty_series()
    frame = pd.concat(parts, ignore_index=True)
    frame["time"] = frame["time"].astype(float)
    frame["run_id"] = run_id
    frame["seconds"] = frame["time"] - start_s
    frame["time"] = pd.to_datetime(frame["time"], unit="s", utc=True)
    frame["step"] = frame["step"].astype("int64")
    frame["value"] = frame["value"].astype(float)
    return frame[SERIES_COLUMNS]
