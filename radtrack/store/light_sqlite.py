"""A SQLite MLflow store written through the DB-API, for the launcher's common path.

What ``MlflowClient`` does against ``sqlite:///...`` for the calls the launcher makes (an
experiment looked up or created, runs created, searched and read, tags, params, metrics, the
status, local artifacts), with MLflow's own rules: a run's name is its ``mlflow.runName`` tag
too, a param once logged never changes, ``latest_metrics`` keeps the point greatest by
(step, timestamp, value), NaN is stored as 0 with ``is_nan``, infinities as the largest
double. Each call is one transaction on one connection kept for the launcher's life (a run's
creation with its tags is one, not MLflow's several sessions). The store's tables are
MLflow's and made by MLflow (radtrack/store/newstore.py); a schema this module does not
know is not written here: :func:`compatible` says so and the handle uses MLflow's client
(radtrack/store/handle.py).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from radtrack.store import outage
from radtrack.store.entities import (
    Experiment,
    FileInfo,
    Metric,
    Page,
    Run,
    RunData,
    RunInfo,
    StoreError,
)
from radtrack.store.light_client import LightClient
from radtrack.store.local_artifacts import copy_artifact, download, listing, local_folder
from radtrack.store.search_filter import Unsupported, order_ascending, parse
from radtrack.store.sqlite_rows import RUN_NAME, clause_sql, log_params, log_points, set_tags

USER = "mlflow.user"
_RUN_COLUMNS = {"run_uuid", "name", "source_type", "source_name", "entry_point_name", "user_id",
                "status", "start_time", "end_time", "source_version", "lifecycle_stage",
                "artifact_uri", "experiment_id", "deleted_time"}
_EXPERIMENT_COLUMNS = {"experiment_id", "name", "artifact_location", "lifecycle_stage",
                       "creation_time", "last_update_time", "workspace"}
_METRIC_COLUMNS = {"key", "value", "timestamp", "run_uuid", "step", "is_nan"}
busy_timeout_s = outage.sqlite_busy_s  # another writer (the script's own MLflow calls) holding the file


def database_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` URI (relative to the working folder with three slashes,
    absolute with four); None for anything else (in-memory, query options)."""
    if not uri.startswith("sqlite:///") or "?" in uri:
        return None
    rest = uri.removeprefix("sqlite:///")
    return Path(rest) if rest else None


def compatible(path: Path) -> bool:
    """Whether the store's tables have the columns this module writes (MLflow 2.x-3.x)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=busy_timeout_s())
    except sqlite3.Error:
        return False
    try:
        def cols(table: str) -> set[str]:
            return {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}

        return (_RUN_COLUMNS <= cols("runs") and _EXPERIMENT_COLUMNS <= cols("experiments")
                and _METRIC_COLUMNS <= cols("metrics") and _METRIC_COLUMNS <= cols("latest_metrics")
                and {"key", "value", "run_uuid"} <= cols("tags") and {"key", "value", "run_uuid"} <= cols("params")
                and sqlite3.sqlite_version_info >= (3, 24, 0))
    except sqlite3.Error:
        return False
    finally:
        con.close()


def now_ms() -> int:
    return int(time.time() * 1000)


class SqliteClient(LightClient):
    """The calls of ``MlflowClient`` the launcher makes, against one SQLite store."""

    light = True

    def __init__(self, uri: str, path: Path):
        self.uri, self.path = uri, path
        self._lock = threading.RLock()
        self._depth = 0  # open batch() levels of the thread holding the lock
        self._copies: list[Any] = []  # artifact copies a batch makes once it committed
        self._con: sqlite3.Connection | None = None
        self._mlflow: Any = None

    # -- plumbing ---------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """The launcher's one connection (made on first use; used under :attr:`lock`)."""
        if self._con is None:
            con = sqlite3.connect(str(self.path), timeout=busy_timeout_s(), check_same_thread=False,
                                  isolation_level=None)
            con.execute("PRAGMA foreign_keys = ON")
            self._con = con
        return self._con

    def _write(self, fn: Any) -> Any:
        """``fn(connection)`` in one write transaction (taken at once: no upgrade deadlock);
        inside :meth:`batch`, a savepoint of the batch's transaction."""
        with self._lock:
            con = self.connection()
            nested = self._depth > 0
            con.execute("SAVEPOINT call" if nested else "BEGIN IMMEDIATE")
            try:
                out = fn(con)
            except BaseException:
                con.execute("ROLLBACK TO call" if nested else "ROLLBACK")
                if nested:
                    con.execute("RELEASE call")
                raise
            con.execute("RELEASE call" if nested else "COMMIT")
            return out

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Every call of this thread inside is one transaction, committed at the end (rolled
        back if the block raises): a row's end is one commit, not a dozen, each of which
        syncs the file to disk (about 0.2-0.4 s of the end under load on the 2-core VM).
        Other threads wait for it, as for any write."""
        later: list[Any] = []
        with self._lock:
            con = self.connection()
            if self._depth == 0:
                con.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    con.execute("ROLLBACK")
                    self._copies.clear()  # a retry of the block copies them again
                raise
            self._depth -= 1
            if self._depth == 0:
                con.execute("COMMIT")
                later, self._copies = self._copies, []
        for copy in later:  # files, outside the transaction: no writer waits on a large copy
            copy()

    def _read(self, fn: Any) -> Any:
        with self._lock:
            return fn(self.connection())

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None

    # -- experiments ------------------------------------------------------------------------

    def _experiment(self, con: sqlite3.Connection, where: str, arg: Any) -> Experiment | None:
        row = con.execute("SELECT experiment_id, name, artifact_location, lifecycle_stage "
                          f"FROM experiments WHERE {where} AND workspace = 'default'", (arg,)).fetchone()
        if row is None:
            return None
        tags = dict(con.execute("SELECT key, value FROM experiment_tags WHERE experiment_id = ?",
                                (row[0],)))
        return Experiment(str(row[0]), row[1], row[2] or "", row[3] or "active", tags)

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        return self._read(lambda con: self._experiment(con, "name = ?", name))

    def get_experiment(self, experiment_id: str) -> Experiment:
        exp = self._read(lambda con: self._experiment(con, "experiment_id = ?", int(experiment_id)))
        if exp is None:
            raise StoreError(f"No Experiment with id={experiment_id} exists", "RESOURCE_DOES_NOT_EXIST")
        return exp

    def create_experiment(self, name: str, artifact_location: str | None = None) -> str:
        if not artifact_location:  # MLflow's default root: only its own client knows it
            raise StoreError("an experiment without an artifact location", "INVALID_PARAMETER_VALUE")

        def make(con: sqlite3.Connection) -> str:
            if con.execute("SELECT 1 FROM experiments WHERE name = ? AND workspace = 'default'",
                           (name,)).fetchone():
                raise StoreError(f"Experiment(name={name}) already exists", "RESOURCE_ALREADY_EXISTS")
            t = now_ms()
            cur = con.execute("INSERT INTO experiments (name, artifact_location, lifecycle_stage, "
                              "creation_time, last_update_time, workspace) VALUES (?, ?, 'active', ?, ?, "
                              "'default')", (name, artifact_location, t, t))
            return str(cur.lastrowid)

        return self._write(make)

    def search_experiments(self, **kwargs: Any) -> list[Experiment]:
        if kwargs:  # a view of deleted ones too: a reader's error message only
            return self.mlflow().search_experiments(**kwargs)

        def read(con: sqlite3.Connection) -> list[Experiment]:
            ids = [r[0] for r in con.execute("SELECT experiment_id FROM experiments WHERE "
                                             "lifecycle_stage = 'active' AND workspace = 'default'")]
            return [e for i in ids if (e := self._experiment(con, "experiment_id = ?", i))]

        return self._read(read)

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, experiment_id: str, start_time: int | None = None,
                   tags: dict[str, str] | None = None, run_name: str | None = None) -> Run:
        """MLflow's create_run: the run, its name tag and its tags in one transaction; the
        user is the ``mlflow.user`` tag's, as MLflow takes it."""
        tags = dict(tags or {})
        if run_name and tags.get(RUN_NAME, run_name) != run_name:
            raise StoreError("Both 'run_name' argument and 'mlflow.runName' tag are specified, but "
                             "with different values", "INVALID_PARAMETER_VALUE")
        name = run_name or tags.get(RUN_NAME) or uuid.uuid4().hex[:8]
        tags.setdefault(RUN_NAME, name)
        run_id = uuid.uuid4().hex
        start = start_time or now_ms()
        user = tags.get(USER, "unknown")

        def make(con: sqlite3.Connection) -> str:
            exp = self._experiment(con, "experiment_id = ?", int(experiment_id))
            if exp is None:
                raise StoreError(f"No Experiment with id={experiment_id} exists", "RESOURCE_DOES_NOT_EXIST")
            if exp.lifecycle_stage != "active":
                raise StoreError(f"The experiment {experiment_id} must be in the 'active' state",
                                 "INVALID_STATE")
            artifact_uri = f"{exp.artifact_location.rstrip('/')}/{run_id}/artifacts"
            con.execute("INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, "
                        "user_id, status, start_time, end_time, source_version, lifecycle_stage, "
                        "artifact_uri, experiment_id, deleted_time) VALUES (?, ?, 'UNKNOWN', '', '', ?, "
                        "'RUNNING', ?, NULL, '', 'active', ?, ?, NULL)",
                        (run_id, name, user, start, artifact_uri, int(experiment_id)))
            con.executemany('INSERT INTO tags ("key", value, run_uuid) VALUES (?, ?, ?)',
                            [(k, v, run_id) for k, v in tags.items()])
            return artifact_uri

        artifact_uri = self._write(make)
        return Run(RunInfo(run_id, name, str(experiment_id), user, "RUNNING", start, None, artifact_uri),
                   RunData(tags=tags))

    def _runs(self, con: sqlite3.Connection, where: str, args: Sequence[Any]) -> list[Run]:
        rows = con.execute("SELECT run_uuid, name, experiment_id, user_id, status, start_time, end_time, "
                           f"artifact_uri, lifecycle_stage FROM runs WHERE {where} "
                           "ORDER BY start_time DESC, run_uuid", tuple(args)).fetchall()
        out = []
        for r in rows:
            rid = r[0]
            data = RunData(
                params=dict(con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (rid,))),
                tags=dict(con.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (rid,))),
                metrics={k: (math.nan if nan else v) for k, v, nan in con.execute(
                    "SELECT key, value, is_nan FROM latest_metrics WHERE run_uuid = ?", (rid,))})
            out.append(Run(RunInfo(rid, r[1] or "", str(r[2]), r[3] or "", r[4], r[5], r[6], r[7] or "",
                                   r[8] or "active"), data))
        return out

    def get_run(self, run_id: str) -> Run:
        runs = self._read(lambda con: self._runs(con, "run_uuid = ?", [run_id]))
        if not runs:
            raise StoreError(f"Run with id={run_id} not found", "RESOURCE_DOES_NOT_EXIST")
        return runs[0]

    def search_runs(self, experiment_ids: Iterable[str], filter_string: str = "",
                    max_results: int = 1000, page_token: str | None = None,
                    order_by: list[str] | None = None, **_: Any) -> Page:
        """Active runs of the experiments matching ``filter_string`` (the forms
        radtrack/store/search_filter.py reads), newest first as MLflow orders them, or
        oldest first (``order_by`` start time ascending); one page of ``max_results``."""
        ascending = order_ascending(order_by)
        try:
            clauses = parse(filter_string)
        except Unsupported:
            ascending = None
        if ascending is None:
            return self.mlflow().search_runs(list(experiment_ids), filter_string=filter_string,
                                             max_results=max_results, page_token=page_token,
                                             order_by=order_by)
        ids = [int(i) for i in experiment_ids]
        if not ids:
            return Page()
        where = [f"experiment_id IN ({', '.join('?' * len(ids))})", "lifecycle_stage = 'active'"]
        args: list[Any] = list(ids)
        for c in clauses:
            sql, more = clause_sql(c)
            where.append(sql)
            args += more
        runs = self._read(lambda con: self._runs(con, " AND ".join(where), args))
        if ascending:  # stable: runs that started together stay in run id order, as MLflow's
            runs.sort(key=lambda r: r.info.start_time or 0)
        first = int(page_token or 0)
        last = first + max_results
        return Page(runs[first:last], str(last) if len(runs) > last else None)

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        """Every point of ``key``, ordered as MLflow's SQL store orders them."""
        rows = self._read(lambda con: con.execute(
            "SELECT value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? AND key = ? "
            "ORDER BY timestamp, step, value", (run_id, key)).fetchall())
        return [Metric(key, math.nan if nan else v, t, s) for v, t, s, nan in rows]

    def update_run(self, run_id: str, status: str | None = None, name: str | None = None) -> None:
        def change(con: sqlite3.Connection) -> None:
            if status:
                con.execute("UPDATE runs SET status = ? WHERE run_uuid = ?", (status, run_id))
            if name:
                con.execute("UPDATE runs SET name = ? WHERE run_uuid = ?", (name, run_id))
                set_tags(con, run_id, [(RUN_NAME, name)])

        self._write(change)

    def set_terminated(self, run_id: str, status: str = "FINISHED", end_time: int | None = None) -> None:
        end = end_time or now_ms()

        def change(con: sqlite3.Connection) -> None:
            cur = con.execute("UPDATE runs SET status = ?, end_time = ? WHERE run_uuid = ?",
                              (status, end, run_id))
            if cur.rowcount == 0:
                raise StoreError(f"Run with id={run_id} not found", "RESOURCE_DOES_NOT_EXIST")

        self._write(change)

    def set_tag(self, run_id: str, key: str, value: Any) -> None:
        self._write(lambda con: set_tags(con, run_id, [(key, str(value))]))

    def log_batch(self, run_id: str, metrics: Sequence[Any] = (), params: Sequence[Any] = (),
                  tags: Sequence[Any] = ()) -> None:
        """Params (an existing key keeps its value: a different one is refused, as MLflow
        does), tags, then metrics (a point already stored is not stored twice), in one
        transaction."""
        if not (metrics or params or tags):
            return

        def write(con: sqlite3.Connection) -> None:
            if con.execute("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?",
                           (run_id,)).fetchone() is None:
                raise StoreError(f"Run with id={run_id} not found", "RESOURCE_DOES_NOT_EXIST")
            if params:
                log_params(con, run_id, [(p.key, str(p.value)) for p in params])
            if tags:
                set_tags(con, run_id, [(t.key, str(t.value)) for t in tags])
            if metrics:
                log_points(con, run_id, [(m.key, float(m.value), int(m.timestamp), int(m.step or 0))
                                         for m in metrics])

        self._write(write)

    def log_metrics(self, run_id: str, points: list[tuple[str, float, int, int]]) -> None:
        """(key, value, timestamp ms, step) points in one transaction (the sink's path)."""
        if points:
            self._write(lambda con: log_points(con, run_id, points))

    # -- artifacts --------------------------------------------------------------------------

    def artifact_dir(self, run_id: str, artifact_path: str | None) -> Path | None:
        """The local folder of the run's artifacts under ``artifact_path``; None where the
        run keeps them elsewhere than on a file system this host sees as a path."""
        uri = self._read(lambda con: con.execute("SELECT artifact_uri FROM runs WHERE run_uuid = ?",
                                                 (run_id,)).fetchone())
        if uri is None:
            raise StoreError(f"Run with id={run_id} not found", "RESOURCE_DOES_NOT_EXIST")
        return local_folder(uri[0] or "", artifact_path)

    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        """A file (or, by log_artifacts, a folder's content) into the run's artifacts; inside
        a :meth:`batch`, copied once the batch committed (before it returns)."""
        folder = self.artifact_dir(run_id, artifact_path)
        if folder is None:
            self.mlflow().log_artifact(run_id, local_path, artifact_path)
            return
        local = Path(local_path)
        with self._lock:
            if self._depth > 0:
                self._copies.append(lambda: copy_artifact(local, folder))
                return
        copy_artifact(local, folder)

    def log_artifacts(self, run_id: str, local_dir: str, artifact_path: str | None = None) -> None:
        self.log_artifact(run_id, local_dir, artifact_path)

    def list_artifacts(self, run_id: str, path: str | None = None) -> list[FileInfo]:
        folder = self.artifact_dir(run_id, path)
        return self.mlflow().list_artifacts(run_id, path) if folder is None else listing(folder, path)

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        root = self.artifact_dir(run_id, None)
        if root is None:
            return self.mlflow().download_artifacts(run_id, path, dst_path)
        return download(root, path, dst_path)
