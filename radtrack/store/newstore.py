"""A SQLite tracking store, created exactly once and whole, and checked before anything opens it.

MLflow makes a new store's tables on first open, in the store file itself (its alembic
migrations, seconds): two processes opening a new store at once both migrate ("table ...
already exists"), and a kill midway leaves a store MLflow can never open again. radtrack
instead builds MLflow's empty schema once per schema revision as a template file (in the
per-user cache, :func:`cache_dir`: in a temporary file, then moved into place) and creates a
new store by copying the template to a temporary file beside it and linking that into place
(``os.link`` fails when another process got there first: it won, and its store is as good).
The launcher does this before its scripts are released (milliseconds once the template
exists), so a script, a child process of it, a second launcher, ``radtrack sync`` or
``radtrack ui`` all find a complete store; a SIGKILL at any moment leaves either no store or
a whole one (and at most a temporary file, removed by the next creation).

An existing store is looked at with Python's sqlite3 before MLflow opens it
(:func:`inspect`): one left half-made by an older radtrack or MLflow (no ``alembic_version``,
a migration interrupted: ``_alembic_tmp_*`` tables, an older revision with tables missing)
is rebuilt from the template when it holds no runs, under a lock; otherwise the one line
names ``radtrack sync --repair-store`` (radtrack/store/storerepair.py). A store MLflow
cannot write (a read-only file, a folder SQLite cannot make its journal in) is said in one
line before the scripts start.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import logging
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from radtrack.errors import RadtrackError

CACHE_ENV = "RADTRACK_SCHEMA_CACHE"  # where the templates are kept (default: the user's cache)
TMP_TAG = ".radtrack-new-"  # a store being created: .<name>.radtrack-new-<pid>.tmp beside it
REPAIR_COMMAND = "radtrack sync --repair-store --tracking-uri {uri}"
# the tables every MLflow store has held since its first schema: a store without them is no
# MLflow store (or a half-made one)
CORE_TABLES = frozenset({"experiments", "runs", "metrics", "params", "tags"})
# MLflow's and alembic's loggers that announce table creation ("Creating initial MLflow
# database tables...", "Running upgrade ..."): silent while radtrack makes them
_CREATION_LOGGERS = ("mlflow.store.db.utils", "mlflow.store.db_migrations", "alembic")

LOCK_WAIT_S = 0.2  # how long a check waits for a store another writer holds (then: not judged)
_PREPARED: dict[str, tuple[int, int]] = {}  # stores this process checked or made: their file's identity


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store (absolute), None for any other URI or in-memory."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri.removeprefix("sqlite:///").split("?", 1)[0]
    if raw in ("", ":memory:"):
        return None
    return Path(raw).absolute()


# -- MLflow's schema, without importing MLflow ---------------------------------------------
_REVISION = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+)$", re.MULTILINE)
_HEADS: list[tuple[str, frozenset[str]]] = []


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


# -- the template --------------------------------------------------------------------------
def cache_dir() -> Path:
    """``$RADTRACK_SCHEMA_CACHE``, else ``$XDG_CACHE_HOME/radtrack`` (``~/.cache/radtrack``):
    one template per user and schema revision, shared by every ``$RADTRACK_HOME``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).absolute() / "radtrack"


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


def template() -> Path:
    """MLflow's empty schema at its head revision, as a SQLite file: built once (MLflow's own
    table creation, in a temporary file moved into place) and kept in :func:`cache_dir`."""
    head, _ = revisions()
    folder = cache_dir()
    path = folder / f"mlflow-schema-{head}.db"
    if path.is_file():
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _clear_leftovers(folder, path.name)
        tmp = folder / f".{path.name}{TMP_TAG}{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
    except OSError:
        from radtrack.script.env import radtrack_home  # a cache it cannot write: the home's

        folder = radtrack_home() / "schema"
        path = folder / path.name
        if path.is_file():
            return path
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{path.name}{TMP_TAG}{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
    try:
        _build(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _build(path: Path) -> None:
    import sqlalchemy
    from mlflow.store.db import utils
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with quiet_creation():
            utils._initialize_tables(engine)
    finally:
        engine.dispose()
    with sqlite3.connect(path) as con:  # one self-contained file: no journal beside it
        con.execute("PRAGMA journal_mode=DELETE")
    _fsync(path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- what a store file holds ---------------------------------------------------------------
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


# -- creation and the checks before a launch -----------------------------------------------
def prepare(uri: str) -> None:
    """Make the SQLite store at ``uri`` ready before anything opens it: create it (whole, once)
    when it does not exist, rebuild one left half-made or empty that holds no runs, and
    refuse in one line (RadtrackError) one that cannot be used as it is: half-made with runs,
    MLflow's schema older or newer than this MLflow's, no SQLite file, read-only. Other URIs,
    and a store this process prepared already, return at once."""
    if uri.split(":", 1)[0].split("+", 1)[0].lower() == "postgresql":
        if uri not in _PREPARED and create_postgres(uri) is not None:
            _PREPARED[uri] = (0, 0)  # asked: not again in this process
        return
    path = sqlite_path(uri)
    if path is None:
        return
    now = identity(uri)
    if now is not None and _PREPARED.get(str(path)) == now:
        return  # the same file as checked before (one deleted or replaced since is looked at again)
    if now is None:
        create(path)
    else:
        _check_existing(uri, path)
        _check_writable(uri, path)
    made = identity(uri)
    if made is not None:
        _PREPARED[str(path)] = made


PG_LOCK_KEY = 0x72616474726B  # the advisory lock radtrack creates a PostgreSQL store's tables under


def create_postgres(uri: str) -> bool | None:
    """Make MLflow's tables in the PostgreSQL database at ``uri`` when it has none, under a
    session advisory lock (radtrack processes creating it at once wait for one another; each
    of MLflow's two steps is one transaction there, so a kill leaves a state MLflow resumes
    from); True when this process made them, False when they were there. None where it
    could not ask: no driver, or a database that answers nothing (away, login refused: the
    callers' own checks say so, radtrack/store/reach.py)."""
    try:
        import sqlalchemy
        from sqlalchemy.pool import NullPool
    except ImportError:
        return None
    try:
        engine = sqlalchemy.create_engine(uri, poolclass=NullPool)
    except Exception:  # noqa: BLE001 - no driver, an odd URI: MLflow reports it as before
        return None
    made = False
    try:
        with engine.connect() as conn:
            if _pg_whole(conn):
                return False
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": PG_LOCK_KEY})
            conn.commit()
            try:
                if not _pg_whole(conn):
                    from mlflow.store.db import utils

                    with quiet_creation():
                        utils._initialize_tables(engine)
                    made = True
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": PG_LOCK_KEY})
                conn.commit()
    except sqlalchemy.exc.OperationalError:
        return None  # away or refused: said where the launch asks (reach.py)
    finally:
        engine.dispose()
    return made


def _pg_whole(conn) -> bool:  # noqa: ANN001 - a SQLAlchemy connection
    import sqlalchemy

    tables = set(sqlalchemy.inspect(conn).get_table_names())
    conn.commit()
    return "alembic_version" in tables and CORE_TABLES <= tables


def forget(uri: str) -> None:
    """Look at the store again on the next :func:`prepare` (it may have changed)."""
    path = sqlite_path(uri)
    if path is not None:
        _PREPARED.pop(str(path), None)


def create(path: Path) -> bool:
    """Create the store ``path`` from the template, atomically; True when this process made it,
    False when another did first. A folder it cannot write in is a RadtrackError."""
    folder = path.parent
    if not folder.is_dir():
        raise RadtrackError(f"tracking store sqlite:///{path}: folder {folder} does not exist")
    _clear_leftovers(folder, path.name)
    source = template()
    tmp = folder / f".{path.name}{TMP_TAG}{os.getpid()}.tmp"
    try:
        shutil.copyfile(source, tmp)
        _fsync(tmp)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False  # another process created it first: its store is whole too
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            if path.exists():  # a file system without hard links: the narrow window left
                return False
            os.rename(tmp, path)
        return True
    except PermissionError as exc:
        raise RadtrackError(f"tracking store sqlite:///{path} cannot be created: folder {folder} "
                            f"is not writable ({exc.strerror})") from None
    except OSError as exc:
        raise RadtrackError(f"tracking store sqlite:///{path} cannot be created in {folder}: "
                            f"{exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


# what a store holding nothing (no run, experiment or model) is rebuilt from: a creation cut
# short (empty, half-made, or stopped between two migrations: outdated)
REBUILT = ("empty", "half-made", "outdated")
_NO_LINKS = {1, 18, 38, 95}  # EPERM, EXDEV, ENOSYS, EOPNOTSUPP: no hard links here


def _clear_leftovers(folder: Path, name: str) -> None:
    """Temporary files of creations killed midway (their process gone)."""
    for tmp in folder.glob(f".{name}{TMP_TAG}*.tmp"):
        pid = tmp.name.removesuffix(".tmp").rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def store_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on the store's folder for a rebuild or an upgrade of ``path`` (other
    radtrack processes wait; no lock file is left behind). Where the folder cannot be locked,
    nothing is held."""
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def rebuild(path: Path) -> None:
    """Replace the store ``path`` with a whole, empty one (it holds nothing worth keeping: the
    caller checked, under :func:`store_lock`), atomically."""
    tmp = path.parent / f".{path.name}{TMP_TAG}{os.getpid()}.tmp"
    try:
        shutil.copyfile(template(), tmp)
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    for suffix in ("-journal", "-wal", "-shm"):  # the old file's: they would be replayed onto the new
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _check_existing(uri: str, path: Path) -> None:
    from radtrack.store.uris import redact

    state = inspect(path)
    if state.kind in ("whole", "busy"):  # busy: a writer holds it (reach.sqlite_busy says so)
        return
    shown = redact(uri)
    if state.kind in REBUILT and state.held == 0:
        with store_lock(path):
            again = inspect(path)
            if again.kind in REBUILT and again.held == 0:
                rebuild(path)
                if again.kind != "empty":
                    detail = again.detail or f"MLflow schema {again.revision}, not {revisions()[0]}"
                    print(f"[radtrack] tracking store {shown} was left half-made ({detail}) and "
                          "held no runs: made whole again", file=sys.stderr, flush=True)
        return
    if state.kind == "half-made":
        raise RadtrackError(
            f"tracking store {shown} was left half-made ({state.detail}) and holds "
            f"{state.runs} run(s): MLflow cannot open it; repair it with "
            f"`{REPAIR_COMMAND.format(uri=shown)}` (it keeps a copy of the store as it was)")
    if state.kind == "outdated":
        raise RadtrackError(
            f"tracking store {shown} has MLflow's schema {state.revision}; this MLflow needs "
            f"{revisions()[0]}: upgrade it with `{REPAIR_COMMAND.format(uri=shown)}` (under a "
            "lock, in a copy moved into place; it keeps a copy of the store as it was)")
    if state.kind == "newer":
        raise RadtrackError(
            f"tracking store {shown} has MLflow schema {state.revision}, made by a newer MLflow "
            f"than this one ({_mlflow_version()}): upgrade MLflow here, or track into another store")
    if state.kind == "not-sqlite":
        raise RadtrackError(f"tracking store {shown}: {path} is not a SQLite database ({state.detail})")
    raise RadtrackError(f"tracking store {shown}: {path} cannot be read ({state.detail})")


def _mlflow_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"MLflow {version('mlflow')}"
    except PackageNotFoundError:
        return "MLflow"


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
    finally:
        con.close()
    return ""


def _check_writable(uri: str, path: Path) -> None:
    from radtrack.store.uris import redact

    why = writable_problem(path)
    if why:
        raise RadtrackError(f"tracking store {redact(uri)} is read-only for this user ({why}): "
                            "nothing could be stored; make it writable or track into another store")


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
    why = writable_problem(path)
    return f"it is read-only ({why})" if why else ""
