"""MLflow's rules for the rows of its SQLite tables, as radtrack's light client writes them
(radtrack/store/light_sqlite.py): a run's name is its ``mlflow.runName`` tag too, a param once
logged never changes, a metric point is stored once and ``latest_metrics`` keeps the point
greatest by (step, timestamp, value), NaN is stored as 0 with ``is_nan`` and infinities as
the largest double. Each function works inside the caller's open transaction."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from typing import Any

from radtrack.store.entities import StoreError
from radtrack.store.search_filter import Clause

RUN_NAME = "mlflow.runName"
_UPSERT_LATEST = (
    'INSERT INTO latest_metrics ("key", value, timestamp, step, is_nan, run_uuid) '
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (\"key\", run_uuid) DO UPDATE SET "
    "value = excluded.value, timestamp = excluded.timestamp, step = excluded.step, "
    "is_nan = excluded.is_nan WHERE (excluded.step, excluded.timestamp, excluded.value) > "
    "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)")


def stored_value(value: float) -> tuple[float, bool]:
    """(value, is_nan) as MLflow's SQL store keeps a metric value."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return (1.7976931348623157e308 if value > 0 else -1.7976931348623157e308), False
    return float(value), False


def clause_sql(c: Clause) -> tuple[str, list[Any]]:
    """A search clause (radtrack/store/search_filter.py) as SQL on the runs table, with its values."""
    if c.kind in ("tag", "param"):
        table = "tags" if c.kind == "tag" else "params"
        return f"run_uuid IN (SELECT run_uuid FROM {table} WHERE key = ? AND value {c.op} ?)", [c.key, c.value]
    return f"{c.key} {c.op} ?", [c.value]


def set_tags(con: sqlite3.Connection, run_id: str, items: list[tuple[str, str]]) -> None:
    con.executemany('INSERT INTO tags ("key", value, run_uuid) VALUES (?, ?, ?) ON CONFLICT ("key", '
                    "run_uuid) DO UPDATE SET value = excluded.value", [(k, v, run_id) for k, v in items])
    names = [v for k, v in items if k == RUN_NAME]
    if names:  # the run's name is its mlflow.runName tag: MLflow keeps both the same
        con.execute("UPDATE runs SET name = ? WHERE run_uuid = ?", (names[-1], run_id))


def log_params(con: sqlite3.Connection, run_id: str, items: list[tuple[str, str]]) -> None:
    have = dict(con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)))
    new: dict[str, str] = {}
    for k, v in items:
        old = have.get(k, new.get(k))
        if old is not None and old != v:
            raise StoreError(f"Changing param values is not allowed. Param with key='{k}' was already "
                             f"logged with value='{old}' for run ID='{run_id}'. Attempted logging new "
                             f"value '{v}'.", "INVALID_PARAMETER_VALUE")
        if old is None:
            new[k] = v
    con.executemany('INSERT INTO params ("key", value, run_uuid) VALUES (?, ?, ?)',
                    [(k, v, run_id) for k, v in new.items()])


def log_points(con: sqlite3.Connection, run_id: str, points: Iterable[tuple[str, float, int, int]]) -> None:
    """Metric points and their latest values, by MLflow's rules, in the open transaction."""
    rows: dict[tuple[str, int, int, float, bool], tuple[str, float, int, int, bool, str]] = {}
    latest: dict[str, tuple[str, float, int, int, bool, str]] = {}
    for key, raw, ts, step in points:
        value, is_nan = stored_value(raw)
        row = (key, value, ts, step, is_nan, run_id)
        rows.setdefault((key, ts, step, value, is_nan), row)
        cur = latest.get(key)
        if cur is None or (step, ts, value) > (cur[3], cur[2], cur[1]):
            latest[key] = row
    con.executemany('INSERT OR IGNORE INTO metrics ("key", value, timestamp, step, is_nan, run_uuid) '
                    "VALUES (?, ?, ?, ?, ?, ?)", list(rows.values()))
    con.executemany(_UPSERT_LATEST, list(latest.values()))
