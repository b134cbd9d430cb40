"""Real servers for the team-deployment tests: PostgreSQL and ``mlflow server`` over it.

Registered from conftest.py (``pytest_plugins = ["servers"]``). Session-scoped fixtures:

- ``postgres_server``: a throw-away PostgreSQL (Debian's ``postgresql`` binaries, initdb in a
  temp folder, listening on 127.0.0.1 only on a free port, password auth); run as the
  ``postgres`` user when the tests run as root. ``.new_database(name)`` gives a fresh one.
- ``postgres_uri``: ``postgresql://...`` of a fresh database on that server, for tests that
  use PostgreSQL directly as the MLflow tracking store.
- ``mlflow_server_uri``: ``http://127.0.0.1:<port>`` of an ``mlflow server`` whose backend
  store is its own database on that PostgreSQL and whose artifacts are proxied by the
  server into a temp folder; started after a health check, stopped at the end.

A server's port is picked free, then bound by the server: another pytest worker's server
can take it in between. A server counts as started only when its own process listens there
(``owns_port``); otherwise, or when it could not bind, it is started again on another port.

Each server starts once per pytest session and stops at its end. Without the PostgreSQL
binaries (scripts/ensure-postgres.sh installs them as root), without the ``postgres`` user
as root, or without the psycopg2 driver, the fixtures skip with the reason. The functions
below (``start_postgres``, ``start_mlflow_server``) are also used by benchmarks/teamserver.py.
"""

from __future__ import annotations

import itertools
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_USER = "radtrack"  # the database superuser initdb creates


# Ports for the tests' servers come from a range of their own per xdist worker, below the
# kernel's ephemeral range: bind(0) and every outgoing connection (the tests make thousands)
# draw from that range, so a port picked there can be handed to another socket before the
# server binds it. Here only this worker's own picks can meet, each started at random.
_PORTS_FROM, _PORTS_PER_WORKER, _WORKERS = 20000, 1500, 8
_picks = itertools.count(random.randrange(_PORTS_PER_WORKER))


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_port() -> int:
    """A port on 127.0.0.1 no socket holds now, for a server a test starts: from this xdist
    worker's own range below the ephemeral ports where the host allows it, else any."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    base = _PORTS_FROM + (int(worker) % _WORKERS if worker.isdigit() else 0) * _PORTS_PER_WORKER
    if _PORTS_FROM + _WORKERS * _PORTS_PER_WORKER <= _ephemeral_low():
        for _ in range(_PORTS_PER_WORKER):
            port = base + next(_picks) % _PORTS_PER_WORKER
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    """The free port picked for a server was taken before the server bound it (another
    test's server, or a client's ephemeral port): the caller picks another one."""


PORT_ATTEMPTS = 3  # pick-then-bind is racy beside other pytest workers starting servers


def owns_port(proc: subprocess.Popen, port: int) -> bool:
    """Whether ``proc`` or one of its descendants listens on 127.0.0.1:``port``: a server's
    health check alone cannot tell ours from another server that took the port first."""
    import psutil

    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for p in tree:
        try:
            conns = p.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns):
            return True
    return False


def _bind_refused(log: Path) -> bool:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "ddress already in use" in text or "could not bind" in text


def postgres_bindir() -> Path | None:
    """Folder with initdb and postgres: PATH first, else Debian's /usr/lib/postgresql/<v>/bin."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("postgres"):
        return Path(on_path).resolve().parent
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else None


def why_no_postgres() -> str | None:
    """None when a PostgreSQL server can be started here, else the reason it cannot."""
    if postgres_bindir() is None:
        return ("no PostgreSQL server binaries (Debian package postgresql; "
                "scripts/ensure-postgres.sh installs it when run as root)")
    try:
        import psycopg  # noqa: F401  (SQLAlchemy 2.1+ default driver for postgresql://)
    except ImportError:
        return "the psycopg driver is not installed (pip install 'radtrack[team]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


@dataclass
class Postgres:
    """A running throw-away PostgreSQL server on 127.0.0.1."""

    proc: subprocess.Popen
    root: Path
    port: int
    password: str
    log: Path
    databases: list[str] = field(default_factory=list)

    def uri(self, database: str) -> str:
        """SQLAlchemy URI with the driver named, so it works with any SQLAlchemy 2.x."""
        return f"postgresql+psycopg://{PG_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def libpq_uri(self, database: str) -> str:
        return f"postgresql://{PG_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self, name: str, mlflow_tables: bool = False) -> str:
        """Create database ``name`` (dropped first if present) and return its URI; with
        ``mlflow_tables``, a copy of a database MLflow's tables were made in once per server
        (CREATE DATABASE ... TEMPLATE): MLflow's migrations over PostgreSQL cost 0.9-1.7
        CPU-s and 7-16 s of round trips on the loaded 2-core VM, each time."""
        import psycopg

        template = self._mlflow_template() if mlflow_tables else None
        conn = psycopg.connect(self.libpq_uri("postgres"))
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                cur.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        finally:
            conn.close()
        self.databases.append(name)
        return self.uri(name)

    def _mlflow_template(self) -> str:
        """The database MLflow's tables are made in once (radtrack/store/pgschema.py, MLflow's
        own creation), never connected to afterwards: a template must have no sessions."""
        name = "radtrack_mlflow_template"
        if name not in self.databases:
            uri = self.new_database(name)
            from radtrack.store import pgschema

            assert pgschema.create(uri) is True, f"MLflow's tables were not made in {name}"
        return name

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGINT)  # SIGINT: PostgreSQL's "fast" shutdown
        shutil.rmtree(self.root, ignore_errors=True)


def _as_server_user() -> dict:
    """Popen arguments to run the server as 'postgres' when we are root (it refuses root)."""
    if os.geteuid() != 0:
        return {}
    pw = pwd.getpwnam("postgres")
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


def start_postgres(settings: dict[str, str] | None = None, timeout: float = 60.0) -> Postgres:
    """initdb in a fresh temp folder and start ``postgres`` on 127.0.0.1:<free port>.

    ``settings`` are extra ``-c name=value`` server settings. Raises RuntimeError with the
    server's log when it does not come up."""
    bindir = postgres_bindir()
    assert bindir is not None, why_no_postgres()
    run_as = _as_server_user()
    # not under pytest's tmp (0700, root's): the server user must reach its data directory
    root = Path(tempfile.mkdtemp(prefix="radtrack-pg-", dir="/tmp" if run_as else None))
    data = root / "data"
    password = secrets.token_hex(12)
    (root / "pw").write_text(password + "\n")
    if run_as:
        os.chown(root, run_as["user"], run_as["group"])
        os.chown(root / "pw", run_as["user"], run_as["group"])
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    init = subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, "--pwfile", str(root / "pw"),
         "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8", "--no-locale"],
        capture_output=True, text=True, env=env, cwd=root, **run_as)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
    (root / "pw").unlink()
    for attempt in range(PORT_ATTEMPTS):
        try:
            return _run_postgres(bindir, root, password, settings, run_as, env, timeout)
        except PortTaken:
            if attempt == PORT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _run_postgres(bindir: Path, root: Path, password: str, settings: dict[str, str] | None,
                  run_as: dict, env: dict[str, str], timeout: float) -> Postgres:
    data, log = root / "data", root / "server.log"
    port = free_port()
    args = [str(bindir / "postgres"), "-D", str(data), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
            "-c", "max_connections=200"]
    for name, value in (settings or {}).items():
        args += ["-c", f"{name}={value}"]
    logf = log.open("wb")
    if run_as:
        os.chown(log, run_as["user"], run_as["group"])
    proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, env=env, cwd=root,
                            start_new_session=True, **run_as)
    logf.close()
    server = Postgres(proc, root, port, password, log)
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(server.libpq_uri("postgres"), connect_timeout=2).close()
            return server  # our password: our server
        except psycopg.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-3000:]
                if proc.poll() is not None and _bind_refused(log):
                    proc.wait()
                    log.rename(root / f"server-port-{port}-taken.log")
                    raise PortTaken(f"127.0.0.1:{port} was taken before PostgreSQL bound it") from None
                server.stop()
                raise RuntimeError(f"PostgreSQL did not start on 127.0.0.1:{port}:\n{text}") from None
            time.sleep(0.2)


@dataclass
class MlflowServer:
    proc: subprocess.Popen
    uri: str
    artifacts: Path
    log: Path

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGTERM)


def start_mlflow_server(backend_uri: str, artifacts: Path, workdir: Path, workers: int = 1,
                        app_name: str | None = None, env: dict[str, str] | None = None,
                        timeout: float = 180.0, port: int | None = None) -> MlflowServer:
    """``mlflow server`` on 127.0.0.1:<free port> over ``backend_uri``, artifacts proxied into
    ``artifacts``; returns once /health answers. Raises RuntimeError with the log if not.

    One worker by default: with several, uvicorn's supervisor kills workers that do not
    answer its health check within seconds, which a loaded 2-core host can miss while
    importing MLflow (seen here at load 14); one worker still serves requests concurrently
    from its thread pool."""
    for attempt in range(PORT_ATTEMPTS):
        try:
            return _run_mlflow_server(backend_uri, artifacts, workdir, workers, app_name, env,
                                      timeout, port or free_port())
        except PortTaken:
            if port or attempt == PORT_ATTEMPTS - 1:  # a given port: a restart, clients wait there
                raise
    raise AssertionError("unreachable")


def _run_mlflow_server(backend_uri: str, artifacts: Path, workdir: Path, workers: int,
                       app_name: str | None, env: dict[str, str] | None, timeout: float,
                       port: int) -> MlflowServer:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"mlflow-server-{port}.log"
    args = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend_uri,
            "--artifacts-destination", str(artifacts), "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(workers)]
    if app_name:
        args += ["--app-name", app_name]
    with log.open("wb") as logf:
        proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, cwd=workdir,
                                env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
                                     # no GenAI job runners (huey consumers): not used here
                                     "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **(env or {})},
                                start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(uri + "/health", timeout=2).close()
            if owns_port(proc, port):
                return MlflowServer(proc, uri, artifacts, log)
            # another process answers there (seen: a plain server on the port picked for the
            # basic-auth one); ours cannot bind it and must not be taken for it
            stop_process(proc, signal.SIGTERM)
            raise PortTaken(f"{uri} answers, but not from the mlflow server started for it")
        except (urllib.error.URLError, OSError):
            if proc.poll() is not None and _bind_refused(log):
                raise PortTaken(f"{uri}: taken before the mlflow server bound it") from None
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_process(proc, signal.SIGTERM)
                text = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"mlflow server did not answer on {uri}/health:\n{text}") from None
            time.sleep(0.3)


def stop_process(proc: subprocess.Popen, sig: int, grace: float = 20.0) -> None:
    """Signal the process group the server leads, wait, then kill it; safe to call twice."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # workers the leader left behind, if any
    except ProcessLookupError:
        pass
    proc.wait()


# -- fixtures -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    reason = why_no_postgres()
    if reason:
        pytest.skip(f"postgres: {reason}")
    # fsync off: a throw-away test server need not survive a power cut; faster on CI disks
    server = start_postgres({"fsync": "off", "synchronous_commit": "off",
                             "full_page_writes": "off"})
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_uri(postgres_server: Postgres) -> str:
    """A fresh database on the session's PostgreSQL (a ``postgresql://`` tracking URI)."""
    return postgres_server.new_database("radtrack_tests")


@pytest.fixture(scope="session")
def mlflow_server_uri(postgres_server: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``http://127.0.0.1:<port>``: ``mlflow server`` over its own PostgreSQL database,
    artifacts proxied by the server into a temp folder."""
    backend = postgres_server.new_database("mlflow_server", mlflow_tables=True)
    work = tmp_path_factory.mktemp("mlflow-server")
    server = start_mlflow_server(backend, work / "artifacts", work)
    yield server.uri
    server.stop()


@dataclass
class AuthServer:
    """``mlflow server --app-name basic-auth`` over PostgreSQL, with an admin and a viewer."""

    uri: str
    admin: tuple[str, str]
    viewer: tuple[str, str]  # a user with the default permission READ: can read, not write


@pytest.fixture(scope="session")
def mlflow_auth_server(postgres_server: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    """An ``mlflow server --app-name basic-auth`` (users in their own PostgreSQL database,
    default permission READ) with an admin and a read-only ``viewer`` account; skips when
    MLflow's auth extra (Flask-WTF) is not installed."""
    try:
        import flask_wtf  # noqa: F401  (mlflow[auth])
    except ImportError:
        pytest.skip("basic-auth: MLflow's auth extra is not installed (pip install 'radtrack[team]')")
    work = tmp_path_factory.mktemp("mlflow-auth-server")
    admin = ("admin", secrets.token_hex(8))
    viewer = ("viewer", secrets.token_hex(8))
    ini = work / "basic_auth.ini"
    ini.write_text("[mlflow]\ndefault_permission = READ\n"
                   f"database_uri = {postgres_server.new_database('mlflow_auth_users')}\n"
                   f"admin_username = {admin[0]}\n"
                   "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    server = start_mlflow_server(postgres_server.new_database("mlflow_auth_server", mlflow_tables=True),
                                 work / "artifacts", work, app_name="basic-auth",
                                 env={"MLFLOW_AUTH_CONFIG_PATH": str(ini),
                                      "MLFLOW_AUTH_ADMIN_PASSWORD": admin[1],
                                      "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(16)})
    try:
        import requests

        r = requests.post(server.uri + "/api/2.0/mlflow/users/create", auth=admin, timeout=30,
                          json={"username": viewer[0], "password": viewer[1]})
        r.raise_for_status()
        yield AuthServer(server.uri, admin, viewer)
    finally:
        server.stop()
