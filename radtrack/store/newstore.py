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
(radtrack/store/storestate.py): one left half-made by an older radtrack or MLflow (no ``alembic_version``,
a migration interrupted: ``_alembic_tmp_*`` tables, an older revision with tables missing)
is rebuilt from the template when it holds no runs, under a lock; otherwise the one line
names ``radtrack sync --repair-store`` (radtrack/storecmds/storerepair.py). A store MLflow
cannot write (a read-only file, a folder SQLite cannot make its journal in) is said in one
line before the scripts start. A new PostgreSQL store's tables: radtrack/store/pgschema.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from radtrack.atomic import replacing
from radtrack.errors import RadtrackError
from radtrack.liveness import pid_alive
from radtrack.store.storestate import (
    identity,
    inspect,
    quiet_creation,
    revisions,
    sqlite_path,
    writable_problem,
)

CACHE_ENV = "RADTRACK_SCHEMA_CACHE"  # where the templates are kept (default: the user's cache)
TMP_TAG = ".radtrack-new-"  # a store being created: .<name>.radtrack-new-<pid>.tmp beside it
REPAIR_COMMAND = "radtrack sync --repair-store --tracking-uri {uri}"
# MLflow's and alembic's loggers that announce table creation ("Creating initial MLflow
# database tables...", "Running upgrade ..."): silent while radtrack makes them
_PREPARED: dict[str, tuple[int, int]] = {}  # stores this process checked or made: their file's identity


# -- the template --------------------------------------------------------------------------
def cache_dir() -> Path:
    """``$RADTRACK_SCHEMA_CACHE``, else ``$XDG_CACHE_HOME/radtrack`` (``~/.cache/radtrack``):
    one template per user and schema revision, shared by every ``$RADTRACK_HOME``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).absolute() / "radtrack"


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
    with replacing(path, tmp=tmp):
        _build(tmp)
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


# -- creation and the checks before a launch -----------------------------------------------
def prepare(uri: str) -> None:
    """Make the SQLite store at ``uri`` ready before anything opens it: create it (whole, once)
    when it does not exist, rebuild one left half-made or empty that holds no runs, and
    refuse in one line (RadtrackError) one that cannot be used as it is: half-made with runs,
    MLflow's schema older or newer than this MLflow's, no SQLite file, read-only. Other URIs,
    and a store this process prepared already, return at once."""
    if uri.split(":", 1)[0].split("+", 1)[0].lower() == "postgresql":
        from radtrack.store import pgschema

        if uri not in _PREPARED and pgschema.create(uri) is not None:
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
        default_experiment(tmp, path)
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


def default_experiment(db: Path, path: Path) -> None:
    """MLflow's ``Default`` experiment (id 0) in the new store file ``db``, its artifacts in
    ``mlartifacts/0`` beside the store ``path`` like every experiment radtrack creates
    (radtrack/store/uris.py): MLflow would otherwise make it when the store is first opened,
    under ``./mlruns/0`` of whichever process opened it."""
    from radtrack.store.uris import default_artifact_location

    location = default_artifact_location(f"sqlite:///{path}")
    now = int(time.time() * 1000)
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        columns = {row[1] for row in con.execute("PRAGMA table_info(experiments)")}
        if con.execute("SELECT 1 FROM experiments WHERE experiment_id = 0").fetchone():
            return
        row = {"experiment_id": 0, "name": "Default", "artifact_location": f"{location}/0",
               "lifecycle_stage": "active", "creation_time": now, "last_update_time": now}
        row = {k: v for k, v in row.items() if k in columns}
        con.execute(f"INSERT INTO experiments ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    tuple(row.values()))


# what a store holding nothing (no run, experiment or model) is rebuilt from: a creation cut
# short (empty, half-made, or stopped between two migrations: outdated)
REBUILT = ("empty", "half-made", "outdated")
_NO_LINKS = {1, 18, 38, 95}  # EPERM, EXDEV, ENOSYS, EOPNOTSUPP: no hard links here


def _clear_leftovers(folder: Path, name: str) -> None:
    """Temporary files of creations killed midway (their process gone)."""
    for tmp in folder.glob(f".{name}{TMP_TAG}*.tmp"):
        pid = tmp.name.removesuffix(".tmp").rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


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
    with replacing(path, tmp=path.parent / f".{path.name}{TMP_TAG}{os.getpid()}.tmp") as tmp:
        shutil.copyfile(template(), tmp)
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


def _check_writable(uri: str, path: Path) -> None:
    from radtrack.store.uris import redact

    why = writable_problem(path)
    if why:
        raise RadtrackError(f"tracking store {redact(uri)} is read-only for this user ({why}): "
                            "nothing could be stored; make it writable or track into another store")


