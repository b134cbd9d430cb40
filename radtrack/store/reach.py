"""Whether a database tracking store takes connections, asked before MLflow opens it.

MLflow opens a ``postgresql://``, ``mysql://`` or ``mssql://`` store through SQLAlchemy and
retries a failed first connection for about 100 s, with a warning each time: a database
that is down would hold the launch (or ``radtrack sync``) that long before it could take the
"store away" path (radtrack/store/outage.py). So radtrack asks first, in well under a
second: a TCP connect with a short timeout to the URI's host and port (or the unix socket
the URI names). Not listening, refused or timed out: the store is away. A server that is
there but refuses the login (a wrong password, no such database) is told apart by one
connection through SQLAlchemy without MLflow's retries (:func:`check_login`).

A tracking URI that answers HTTP but is no MLflow server (radtrack ui's own port, a proxy
answering 404 or 502, any web page) is told apart the same way, before MLflow's client reads
an HTML page as a failed request: :func:`judge` one answer, :func:`not_mlflow` asks for one.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from radtrack.errors import RadtrackError
from radtrack.store.uris import DATABASE_SCHEMES, redact

DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mssql": 1433}
PROBE_TIMEOUT_S = 3.0
# what a database that is there says while it cannot take a session yet: an outage
_TRANSIENT = ("starting up", "shutting down", "too many clients", "too many connections",
              "recovery mode", "cannot connect now")


def scheme(uri: str) -> str:
    """``postgresql`` of ``postgresql+psycopg://...``."""
    return uri.split(":", 1)[0].split("+", 1)[0].lower()


def is_database(uri: str) -> bool:
    """A database store MLflow opens through SQLAlchemy (not SQLite)."""
    return scheme(uri) in DATABASE_SCHEMES


def target(uri: str) -> tuple[str, int] | str | None:
    """Where the database listens: (host, port), a unix socket's path, or None where the URI
    does not say (no host: the driver's own default; several hosts) and nothing is probed."""
    if not is_database(uri):
        return None
    kind = scheme(uri)
    try:
        parts = urlsplit(uri)
        if "," in parts.netloc:
            return None
        port = parts.port or DEFAULT_PORTS[kind]
    except ValueError:
        return None  # MLflow says what is wrong with it
    query = parse_qs(parts.query)
    host = parts.hostname
    if kind == "postgresql":
        host = host or query.get("host", [""])[0] or os.environ.get("PGHOST", "")
        if host.startswith("/"):
            return f"{host}/.s.PGSQL.{port}"
    elif kind == "mysql":
        if query.get("unix_socket"):
            return query["unix_socket"][0]
        if host == "localhost" and parts.port is None:
            return None  # the client library's own socket, wherever it was built to look
    return (host, port) if host else None


def away(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str:
    """Why the database store at ``uri`` takes no connection ("" when it does, or when the
    URI does not say where it listens). A host name that does not resolve is no outage: a
    RadtrackError says so."""
    where = target(uri)
    if where is None:
        return ""
    try:
        if isinstance(where, str):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(where)
        else:
            socket.create_connection(where, timeout=timeout).close()
    except socket.gaierror as exc:
        raise RadtrackError(f"tracking store {redact(uri)}: its host {where[0]!r} does not "
                            f"resolve ({exc.strerror or exc})") from None
    except TimeoutError:
        return f"{_name(where)}: no answer in {timeout:g} s"
    except OSError as exc:
        return f"{_name(where)}: {exc.strerror or exc}"
    return ""


def raise_if_away(uri: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """A ConnectionRefusedError (an outage to radtrack/store/outage.py ``is_outage``) when the
    database store at ``uri`` takes no connection; a RadtrackError when ``uri`` answers HTTP
    but is no MLflow server (:func:`not_mlflow`); before anything opens it through MLflow."""
    wrong = not_mlflow(uri, timeout)
    if wrong:
        raise RadtrackError(wrong)
    why = away(uri, timeout)
    if why:
        raise ConnectionRefusedError(f"database not reachable at {why}")


def check_login(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str:
    """One connection to the database store at ``uri`` through SQLAlchemy, without MLflow's
    retries: a login refused (password, user, no such database) is a RadtrackError in one
    line; a database that cannot take a session yet (starting up, too many clients) returns
    why (an outage); "" when the login worked or could not be tried here (no driver: MLflow
    says so where it matters)."""
    try:
        import sqlalchemy
        from sqlalchemy.pool import NullPool
    except ImportError:
        return ""
    args = {"connect_timeout": int(max(1, timeout))} if scheme(uri) in ("postgresql", "mysql") else {}
    try:
        engine = sqlalchemy.create_engine(uri, poolclass=NullPool, connect_args=args)
    except Exception:  # noqa: BLE001 - no driver, an odd URI: MLflow reports it as before
        return ""
    try:
        engine.connect().close()
    except sqlalchemy.exc.DBAPIError as exc:
        from radtrack.store.outage import describe

        text = describe(exc.orig if exc.orig is not None else exc)
        if any(m in text.lower() for m in _TRANSIENT):
            return text
        if away(uri, timeout):
            return text  # it went away between the two probes
        raise RadtrackError(f"tracking store {redact(uri)} refused the connection: {text}") from None
    except Exception:  # noqa: BLE001 - as above
        return ""
    finally:
        engine.dispose()
    return ""


def sqlite_busy(uri: str, timeout: float = 2.0) -> str:
    """Why the SQLite store at ``uri`` takes no write now (another writer holds it locked past
    ``timeout``), asked with Python's sqlite3 before MLflow opens it (MLflow would wait 20 s a
    query, and retry opening it for about 100 s); "" when it does, or is no SQLite file yet."""
    if not uri.startswith("sqlite:///"):
        return ""
    path = Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
    if not path.is_file():
        return ""
    try:
        con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
        finally:
            con.close()
    except sqlite3.Error as exc:
        return str(exc)
    return ""


_MLFLOW_SERVERS: set[str] = set()  # URIs that answered as MLflow: asked once a process
NOT_MLFLOW_HINT = ("point --tracking-uri (or MLFLOW_TRACKING_URI) at an MLflow tracking server "
                   "(`mlflow server`; radtrack ui serves the page, not a store)")


def judge(uri: str, endpoint: str, status: int, body: str) -> str:
    """Why ``status`` and ``body``, the answer of the server at ``uri`` to a GET of
    ``endpoint`` (credentials.SEARCH, or /health), are no MLflow server's; "" when they may be.
    MLflow answers its REST API in JSON, errors too (``{"error_code": ...}``), and /health
    with ``OK``; 401 and 403 are a login's matter (tracking.check_credentials)."""
    import json

    if status in (401, 403):
        return ""
    text = body.strip()
    if endpoint.startswith("/health"):
        if status == 200 and text == "OK":
            _MLFLOW_SERVERS.add(uri)
            return ""
    else:
        try:
            answer = json.loads(text) if text else {}
        except ValueError:
            answer = None
        if isinstance(answer, dict) and ("error_code" in answer
                                         or 200 <= status < 300 and _searched(answer)):
            _MLFLOW_SERVERS.add(uri)
            return ""
    what = ("an HTML page" if text[:1] == "<" else "an empty body" if not text
            else "a JSON answer without MLflow's fields" if 200 <= status < 300 and text[:1] in "{["
            else f"{text.splitlines()[0][:60]!r}")
    return not_mlflow_line(uri, f"GET {endpoint}", f"HTTP {status}, {what}")


def not_mlflow_line(uri: str, request: str, what: str) -> str:
    """The one line naming ``uri`` as no MLflow server: ``request`` (method and path, its
    query left out) answered ``what``; the password hidden, what to do said."""
    return (f"tracking URI {redact(uri)} answers HTTP but is not an MLflow tracking server "
            f"({request.split('?', 1)[0]}: {what}); {NOT_MLFLOW_HINT}")


def _searched(answer: dict) -> bool:
    """Whether ``answer`` has the shape of MLflow's answer to an experiment search: no field
    but ``experiments`` (each with its ``experiment_id``) and ``next_page_token``, as its
    protobuf JSON omits empty ones (a store without experiments answers ``{}``)."""
    found = answer.get("experiments", [])
    return (set(answer) <= {"experiments", "next_page_token"} and isinstance(found, list)
            and all(isinstance(e, dict) and "experiment_id" in e for e in found))


def not_mlflow(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str:
    """Why the http(s) tracking URI ``uri`` is no MLflow server (:func:`judge`), asked with one
    GET as MLflow's client would authenticate it; "" for one that is, for a URI that is no
    server's, and for a server that does not answer (an outage: said where it matters)."""
    if not uri.startswith(("http://", "https://")) or uri in _MLFLOW_SERVERS:
        return ""
    from radtrack.store import credentials

    headers = credentials.plain(uri, plugins=False)
    endpoint = "/health" if headers is None else credentials.SEARCH + "?max_results=1"
    try:
        status, body = credentials.status(uri, endpoint, headers or {}, timeout)
    except (OSError, ValueError):
        return ""
    return judge(uri, endpoint, status, body)


def _name(where: tuple[str, int] | str) -> str:
    return where if isinstance(where, str) else f"{where[0]}:{where[1]}"
