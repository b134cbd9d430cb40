"""Bulk metric writes for SQL-backed MLflow stores (SQLite, PostgreSQL, MySQL).

``MlflowClient.log_batch`` builds one ORM object per point and costs ~100 us of CPU per
point in MLflow's SQL store: at 10 Hz with a few hundred metrics that alone is several
percent of a core. For a SQL store the sink instead
writes the points itself, in one transaction a flush. On SQLite (the default store) and on
PostgreSQL through psycopg (3 or 2) both statements go through the DB-API directly: one
executemany into ``metrics`` and one UPSERT into ``latest_metrics`` applying MLflow's rule
(a point replaces the latest when its (step, timestamp, value) is greater). Other databases
(and SQLite before 3.24) take SQLAlchemy's insert plus MLflow's own
``_update_latest_metrics_if_necessary`` (one object per key, not per point). Anything
unexpected (a duplicate primary key on a resend, a schema MLflow changed) falls back to
``log_batch``, which stays the reference behaviour; a schema surprise disables the fast
path for the rest of the run. With the launcher's light SQLite client
(radtrack/store/light_sqlite.py) the same two statements run on its own connection, without
MLflow or SQLAlchemy.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

log = logging.getLogger(__name__)


class SqlMetricWriter:
    def __init__(self, client: Any):
        self.client = client
        self.store: Any = None
        self.enabled = False
        self.light: Any = None
        if getattr(client, "light", False):
            # radtrack's light clients: SQLite writes its points itself; a server takes log_batch
            self.light = client if hasattr(client, "connection") else None
            self.enabled = self.light is not None
            return
        try:
            from mlflow.store.tracking.dbmodels.models import SqlMetric
            from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

            store = client._tracking_client.store
            if isinstance(store, SqlAlchemyStore) and all(
                    hasattr(store, a) for a in ("ManagedSessionMaker", "sanitize_metric_value",
                                                "_update_latest_metrics_if_necessary")):
                self.store, self._model = store, SqlMetric
                self._table = SqlMetric.__table__
                dialect = store.engine.dialect
                quote = dialect.identifier_preparer.quote
                # the DB-API's own placeholders: qmark for sqlite3, format for psycopg (2 and 3)
                mark = "%s" if dialect.name == "postgresql" else "?"
                self._direct = (dialect.name == "sqlite" and _SQLITE_UPSERT) or (
                    dialect.name == "postgresql" and dialect.driver in _DIRECT_DRIVERS)
                insert = (f"({', '.join(quote(c) for c in _COLS)}) VALUES ({', '.join([mark] * len(_COLS))})")
                self._insert_metrics = f"INSERT INTO {quote('metrics')} {insert}"
                self._upsert_latest = f"INSERT INTO {quote('latest_metrics')} {insert}{_UPSERT_LATEST}"
                self.enabled = set(self._table.columns.keys()) == {
                    "key", "value", "timestamp", "step", "is_nan", "run_uuid"}
        except Exception as exc:  # not a SQL store, or an MLflow whose internals moved
            log.debug("radtrack: SQL bulk path off: %s", exc)

    def log_metrics(self, run_id: str, points: list[tuple[str, float, int, int]]) -> None:
        """Store (key, value, timestamp ms, step) points exactly as log_batch would."""
        if not points:  # a script run shorter than every listener's interval: nothing to
            return  # write (an empty executemany is an error to the DB-API, not a no-op)
        if not self.enabled:
            self._log_batch(run_id, points)
            return
        if self.light is not None:  # MLflow's rules, one transaction (store/sqlite_rows.log_points)
            self.light.log_metrics(run_id, points)
            return
        import sqlalchemy

        rows: list[tuple[str, float, int, int, bool, str]] = []
        latest: dict[str, tuple[str, float, int, int, bool, str]] = {}
        seen: set[tuple[str, int, int, float]] = set()
        for key, raw, ts, step in points:
            if raw - raw == 0.0:  # finite: the sampled values always are
                is_nan, value = False, raw
            else:
                is_nan, value = self.store.sanitize_metric_value(raw)
            ident = (key, ts, step, value)
            if ident in seen:
                continue
            seen.add(ident)
            row = (key, value, ts, step, is_nan, run_id)
            rows.append(row)
            cur = latest.get(key)
            if cur is None or (step, ts, value) > (cur[3], cur[2], cur[1]):
                latest[key] = row
        try:
            with self.store.ManagedSessionMaker(read_only=False) as session:
                conn = session.connection()
                if self._direct and (conn.dialect.name != "sqlite" or _SQLITE_UPSERT):
                    # plain DB-API executemany: no per-row SQLAlchemy parameter processing,
                    # and latest_metrics kept by one UPSERT whose WHERE is MLflow's own
                    # "strictly more recent by (step, timestamp, value)" rule
                    conn.exec_driver_sql(self._insert_metrics, rows)
                    conn.exec_driver_sql(self._upsert_latest, list(latest.values()))
                else:
                    session.execute(sqlalchemy.insert(self._table), [dict(zip(_COLS, r, strict=True)) for r in rows])
                    self.store._update_latest_metrics_if_necessary(
                        [self._model(**dict(zip(_COLS, r, strict=True))) for r in latest.values()], session)
                session.commit()
        except Exception as exc:
            # MLflow's session wrapper re-raises database errors as MlflowException
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            if isinstance(cause, sqlalchemy.exc.IntegrityError):
                # a resend after an interrupted call: log_batch skips points already stored
                self._log_batch(run_id, points)
            elif isinstance(cause, sqlalchemy.exc.OperationalError):
                raise  # store unreachable or locked: the sink keeps everything and retries
            else:
                log.warning("radtrack: SQL bulk path failed (%s); using log_batch from now on", exc)
                self.enabled = False
                self._log_batch(run_id, points)

    def _log_batch(self, run_id: str, points: list[tuple[str, float, int, int]]) -> None:
        from radtrack.store.entities import Metric

        for i in range(0, len(points), MAX_PER_CALL):  # log_batch takes at most 1000 metrics
            self.client.log_batch(run_id, metrics=[Metric(*p) for p in points[i:i + MAX_PER_CALL]])


MAX_PER_CALL = 1000
# UPSERT arrived in SQLite 3.24 and row-value comparisons in 3.15; an older library (an old
# distribution's Python) takes the SQLAlchemy + MLflow path instead
_SQLITE_UPSERT = sqlite3.sqlite_version_info >= (3, 24, 0)
_DIRECT_DRIVERS = ("psycopg", "psycopg2")  # PostgreSQL drivers whose executemany we call directly
_COLS = ("key", "value", "timestamp", "step", "is_nan", "run_uuid")
_UPSERT_LATEST = (
    ' ON CONFLICT ("key", "run_uuid") DO UPDATE SET "value" = excluded."value", '
    '"timestamp" = excluded."timestamp", "step" = excluded."step", "is_nan" = excluded."is_nan" '
    'WHERE (excluded."step", excluded."timestamp", excluded."value") > '
    '("latest_metrics"."step", "latest_metrics"."timestamp", "latest_metrics"."value")')
