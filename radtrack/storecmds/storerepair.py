"""``radtrack sync --repair-store``: a SQLite store MLflow cannot open made whole again, runs kept.

Two stores need it (radtrack/store/newstore.py names them, with this command): one whose
MLflow schema is older than this MLflow's (MLflow refuses it until upgraded), and one left
half-made by a migration cut short (by an older radtrack or MLflow: ``_alembic_tmp_*``
tables, columns added without the revision that adds them) that holds runs. Either way the
work happens in a copy, under the store's lock and an exclusive SQLite lock on the store
(no writer can slip in between the copy and its move into place), and the copy replaces the
store only once it is whole at this MLflow's head revision: a kill at any moment leaves the
store as it was. The store as it was is kept beside it (``<name>.before-repair-<time>``).

The copy is upgraded with MLflow's own migrations from the revision it records (after a cut
short migration's ``_alembic_tmp_`` table is dropped, or renamed back where it alone holds
the table's rows); where that fails, every table's rows are copied into MLflow's empty
schema at its head revision, column by column (a column this MLflow no longer has is named).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from radtrack.atomic import replacing
from radtrack.errors import RadtrackError
from radtrack.store import newstore, storestate


def repair(uri: str, log: Callable[[str], None] = print) -> bool:
    """Make the SQLite store at ``uri`` whole at this MLflow's head revision, keeping its runs;
    True when it was changed. A RadtrackError when it cannot be (the store is left as it was)."""
    from radtrack.store.uris import redact

    path = storestate.sqlite_path(uri)
    shown = redact(uri)
    if path is None:
        raise RadtrackError(f"--repair-store: {shown} is no SQLite store (only those are repaired here)")
    if not path.exists():
        newstore.prepare(uri)
        log(f"{shown}: did not exist; created whole")
        return True
    with newstore.store_lock(path):
        state = storestate.inspect(path)
        if state.kind == "whole":
            log(f"{shown}: whole at MLflow schema {state.revision} ({state.runs} run(s)); nothing to repair")
            return False
        if state.kind in newstore.REBUILT and state.held == 0:
            newstore.rebuild(path)
            log(f"{shown}: held no runs ({state.detail or state.kind}); made whole again")
            newstore.forget(uri)
            return True
        if state.kind not in ("outdated", "half-made"):
            raise RadtrackError(f"--repair-store: {shown} is {state.kind} ({state.detail or state.revision}): "
                                "not something radtrack can repair")
        _repair_locked(path, state, log)
    newstore.forget(uri)
    log(f"{shown}: whole at MLflow schema {storestate.revisions()[0]} with its {state.runs} run(s)")
    return True


def _repair_locked(path: Path, state: storestate.State, log: Callable[[str], None]) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.before-repair-{stamp}")
    tmp = path.with_name(f".{path.name}{newstore.TMP_TAG}{os.getpid()}.tmp")
    hold = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        hold.execute("BEGIN EXCLUSIVE")  # no reader or writer until the copy is in place
        shutil.copyfile(path, backup)
        with replacing(path, tmp=tmp):  # the repaired copy replaces the store whole, or not at all
            shutil.copyfile(path, tmp)
            try:
                how = _upgrade(tmp)
            except Exception as exc:  # noqa: BLE001 - MLflow's migration refused it: rows copied instead
                log(f"{path}: MLflow's migrations could not finish it "
                    f"({str(exc).splitlines()[0][:200]}); copying its rows into MLflow's empty "
                    "schema instead")
                tmp.unlink(missing_ok=True)
                shutil.copyfile(newstore.template(), tmp)
                how = _salvage(tmp, backup, log)
            after = storestate.inspect(tmp)
            if after.kind != "whole" or after.runs < state.runs:
                raise RadtrackError(f"--repair-store: the repaired copy of {path} is {after.kind} "
                                    f"with {after.runs} of {state.runs} run(s); the store is left "
                                    "as it was")
        log(f"{path}: {how}; the store as it was is kept in {backup}")
    finally:
        with contextlib.suppress(sqlite3.Error):
            hold.execute("ROLLBACK")
        hold.close()


def _upgrade(path: Path) -> str:
    """MLflow's migrations on the copy ``path``, from the revision it records."""
    import sqlalchemy
    from mlflow.store.db import utils
    from sqlalchemy.pool import NullPool

    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for tmp_table in sorted(t for t in tables if t.startswith("_alembic_tmp_")):
            table = tmp_table.removeprefix("_alembic_tmp_")
            if table in tables:
                con.execute(f'DROP TABLE "{tmp_table}"')  # the copy was not finished: the table holds all
            else:
                con.execute(f'ALTER TABLE "{tmp_table}" RENAME TO "{table}"')  # it alone holds them
    before = storestate.inspect(path).revision or "none"
    engine = sqlalchemy.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with newstore.quiet_creation():
            if before == "none":
                utils._initialize_tables(engine)
            else:
                utils._upgrade_db(engine)
    finally:
        engine.dispose()
    return f"upgraded from MLflow schema {before} with MLflow's migrations"


def _salvage(path: Path, source: Path, log: Callable[[str], None]) -> str:
    """Every row of ``source``'s tables into the empty schema at ``path``, by common columns."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("ATTACH DATABASE ? AS old", (str(source),))
        old = {r[0] for r in con.execute("SELECT name FROM old.sqlite_master WHERE type='table'")}
        new = [r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type='table'")
               if r[0] != "alembic_version"]
        con.execute("PRAGMA foreign_keys=OFF")
        con.execute("BEGIN")
        copied = 0
        for table in new:
            src = table if table in old else f"_alembic_tmp_{table}"
            if src not in old:
                continue
            cols = [r[1] for r in con.execute(f'PRAGMA main.table_info("{table}")')]
            have = [r[1] for r in con.execute(f'PRAGMA old.table_info("{src}")')]
            common = [c for c in cols if c in have]
            dropped = [c for c in have if c not in cols]
            if dropped:
                log(f"{table}: column(s) {', '.join(dropped)} are not in this MLflow's schema; not copied")
            names = ", ".join(f'"{c}"' for c in common)
            con.execute(f'DELETE FROM main."{table}"')  # the template's own rows give way
            con.execute(f'INSERT OR IGNORE INTO main."{table}" ({names}) SELECT {names} FROM old."{src}"')
            copied += 1
        con.execute("COMMIT")
        con.execute("DETACH DATABASE old")
    finally:
        con.close()
    return f"its rows copied into MLflow's empty schema ({copied} table(s))"
