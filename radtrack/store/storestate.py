"""What a SQLite tracking store's file holds and whether it can be written, asked with Python's
sqlite3 before MLflow opens it (milliseconds; MLflow's import takes seconds).

:func:`inspect` tells a whole store from one left empty or half-made (a creation or
migration cut short: no ``alembic_version``, ``_alembic_tmp_*`` tables, core tables
missing), one at an older or newer MLflow schema than the installed MLflow's (read from its
migration files: :func:`revisions`), and one that is no SQLite database.
:func:`writable_problem` says why the store cannot be written (a read-only file, a folder
SQLite cannot make its journal in); :func:`missing_runs` and :func:`condition` what the
launcher asks at a workload's end (a store file deleted or replaced during the run).
radtrack/store/newstore.py acts on the answers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# the tables every MLflow store has held since its first schema: a store without them is no
# MLflow store (or a half-made one)
CORE_TABLES = frozenset({"experiments", "runs", "metrics", "params", "tags"})
LOCK_WAIT_S = 0.2  # how long a check waits for a store another writer holds (then: not judged)
_REVISION = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+)$", re.MULTILINE)
_HEADS: list[tuple[str, frozenset[str]]] = []


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store (absolute), None for any other URI or in-memory."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri.removeprefix("sqlite:///").split("?", 1)[0]
    if raw in ("", ":memory:"):
        return None
    return Path(raw).absolute()


def _migrations() -> Path | None:
    spec = importlib.util.find_spec("mlflow")  # finds the package; runs nothing of it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "store" / "db_migrations" / "versions"


def revisions() -> tuple[str, frozenset[str]]:
    """(the head revision of MLflow's schema, every revision it knows), read from the
    migration files of the installed MLflow (9 ms; MLflow's import takes seconds)."""
    if not _HEADS:
        folder = _migrations()
        known: set[str] = set()
        downs: set[str] = set()
        for path in sorted(folder.glob("*.py")) if folder is not None else []:
            try:
                found = dict(_REVISION.findall(path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
            if "revision" not in found:
                continue
            known.add(found["revision"].strip().strip("\"'"))
            downs.update(re.findall(r"[\"']([0-9a-zA-Z_]+)[\"']", found.get("down_revision", "")))
        heads = sorted(known - downs)
        _HEADS.append(("+".join(heads) or "unknown", frozenset(known)))
    return _HEADS[0]


@dataclass
class State:
    """What :func:`inspect` found in a store file."""

    # "whole", "empty", "half-made", "outdated", "newer", "not-sqlite", "unreadable", "missing",
    # "busy" (another writer holds it locked: not judged)
    kind: str
    revision: str = ""
    runs: int = 0
    held: int = 0  # runs, experiments (but Default) and registered models: 0, nothing to lose
    detail: str = ""
    tables: set[str] = field(default_factory=set)


def inspect(path: Path) -> State:
    """Look at the store file ``path`` (read-only, without MLflow): whole at this MLflow's
    head revision, empty (no tables: MLflow would make them in place), half-made (a creation
    or migration cut short), outdated (an older, complete schema: MLflow refuses it until
    upgraded), newer (a revision this MLflow does not know), or no SQLite database."""
    head, known = revisions()
    try:
        if path.stat().st_size == 0:
            return State("empty")
    except FileNotFoundError:
        return State("missing")
    except OSError as exc:
        return State("unreadable", detail=exc.strerror or str(exc))
    # read-write where it can: a transaction cut short by a kill left a hot journal, which
    # SQLite rolls back on the first read (a read-only connection cannot, and fails)
    con = None
    for mode in ("rw", "ro"):
        try:
            con = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=LOCK_WAIT_S)
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            break
        except sqlite3.Error as exc:
            if con is not None:
                con.close()
                con = None
            text = str(exc)
            if "locked" in text or "busy" in text:
                return State("busy", detail=text)  # another writer holds it: not ours to judge
            if "not a database" in text or "malformed" in text:
                return State("not-sqlite", detail=text)
            if mode == "ro":
                return State("unreadable", detail=text)
    assert con is not None
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        revision = ""
        if "alembic_version" in tables:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = str(row[0]) if row else ""
        runs = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] if "runs" in tables else 0
        held = runs
        for table, where in (("experiments", " WHERE experiment_id != 0"), ("registered_models", "")):
            if table in tables:
                held += con.execute(f"SELECT COUNT(*) FROM {table}{where}").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return State("busy", detail=text)
        if "not a database" in text or "malformed" in text:
            return State("not-sqlite", detail=text)
        return State("unreadable", detail=text)
    finally:
        con.close()
    state = State("whole", revision=revision, runs=int(runs), held=int(held), tables=tables)
    leftovers = sorted(t for t in tables if t.startswith("_alembic_tmp_"))
    if not tables:
        state.kind = "empty"
    elif leftovers:
        state.kind, state.detail = "half-made", f"an interrupted migration left {', '.join(leftovers)}"
    elif not revision:
        state.kind, state.detail = "half-made", "its tables were never finished (no schema revision)"
    elif not CORE_TABLES <= tables:
        state.kind = "half-made"
        state.detail = f"tables {', '.join(sorted(CORE_TABLES - tables))} are missing"
    elif revision not in known:
        state.kind = "newer"
    elif revision != head:
        state.kind = "outdated"
    return state


def writable_problem(path: Path) -> str:
    """Why MLflow could not write to the existing store ``path`` ("" when it can): the file
    read-only, or a folder SQLite cannot make its journal in. Asked with one write
    transaction that is rolled back (a few ms); a store locked by another writer is not
    this function's business (reach.sqlite_busy)."""
    try:
        con = sqlite3.connect(path, timeout=LOCK_WAIT_S, isolation_level=None)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute("CREATE TABLE _radtrack_write_check (x)")  # a page written: the journal made
        finally:
            con.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return ""
        if "readonly" in text or "read-only" in text:
            return f"the file {path} is read-only"
        if "unable to open" in text or "disk i/o" in text.lower():
            return (f"folder {path.parent} is not writable (SQLite makes its journal there): "
                    f"{text}")
        return text
    except sqlite3.DatabaseError as exc:  # "file is not a database": overwritten in place
        return str(exc)
    finally:
        con.close()
    return ""


def identity(uri: str) -> tuple[int, int] | None:
    """(device, inode) of the SQLite store file at ``uri`` now; None when it is none or gone."""
    path = sqlite_path(uri)
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def missing_runs(uri: str, run_ids: list[str]) -> list[str]:
    """Those of ``run_ids`` the SQLite store at ``uri`` does not hold now, asked with a fresh
    sqlite3 connection to the file at its path (the launcher's own MLflow connections may
    still write to a file deleted or replaced since); [] for any other store, or when it
    cannot be read now (a lock: the runs are taken as there)."""
    path = sqlite_path(uri)
    ids = [r for r in run_ids if r]
    if path is None or not ids:
        return []
    if not path.exists():
        return ids
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            marks = ",".join("?" * len(ids))
            found = {r[0] for r in con.execute(f"SELECT run_uuid FROM runs WHERE run_uuid IN ({marks})", ids)}
        finally:
            con.close()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return ids  # a new, empty file in its place
        return []
    except sqlite3.Error:
        return ids  # no SQLite database any more
    return [r for r in ids if r not in found]


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def not_sqlite(path: Path) -> bool:
    """Whether ``path`` holds bytes that are no SQLite database (a file overwritten in place);
    an empty file is an empty database to SQLite."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return bool(head) and head != SQLITE_HEADER


def condition(uri: str, since: tuple[int, int] | None = None) -> str:
    """What is wrong with the SQLite store at ``uri`` now, in words for a closing line ("" when
    nothing is, or it is no SQLite store): deleted, replaced (its file is not the one it was
    at ``since``, an identity()), read-only."""
    path = sqlite_path(uri)
    if path is None:
        return ""
    now = identity(uri)
    if now is None:
        return f"its file {path} was deleted"
    if since is not None and now != since:
        return f"its file {path} was replaced by another"
    if not_sqlite(path):
        return (f"its file {path} is no SQLite database any more (overwritten in place): restore "
                "it from a copy, or move it aside for a new store")
    try:
        emptied = path.stat().st_size == 0
    except OSError:
        emptied = False
    if emptied:  # truncated in place: SQLite reads it as a database without tables
        return (f"its file {path} was emptied (truncated in place): restore it from a copy, or "
                "remove it for a new store")
    why = writable_problem(path)
    return f"it is read-only ({why})" if why else ""


_CREATION_LOGGERS = ("mlflow.store.db.utils", "mlflow.store.db_migrations", "alembic")


@contextlib.contextmanager
def quiet_creation() -> Iterator[None]:
    """MLflow's and alembic's INFO lines about creating tables kept out of the terminal."""
    saved = []
    for name in _CREATION_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)
