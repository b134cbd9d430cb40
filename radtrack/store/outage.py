"""A tracking store that is away (a server down or restarting, a SQLite file locked by another
writer): how to tell it from a real error, and how long the launcher waits for it.

The launcher never lets an outage reach the script or end in a traceback: what it cannot
store it keeps in the row's spool for ``radtrack sync`` (docs/architecture.md, "Store
outages"). It does wait a while at the end of a workload, so that a restart of a few tens of
seconds costs nothing: ``RADTRACK_STORE_WAIT_S`` seconds (default 60) in all.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TypeVar

WAIT_ENV = "RADTRACK_STORE_WAIT_S"
DEFAULT_WAIT_S = 60.0

T = TypeVar("T")

# what MLflow, requests/urllib3 and SQLAlchemy say when the store is away, not when a call is wrong
_MARKERS = (
    "connection refused", "max retries exceeded", "failed to establish a new connection",
    "connectionerror", "connection aborted", "connection reset", "remotedisconnected",
    "read timed out", "timed out", "temporarily unavailable", "name or service not known",
    "temporary failure in name resolution", "database is locked", "database table is locked",
    "unable to open database file", "could not connect to server", "connection to server",
    "server closed the connection", "too many 5", "status code 502", "status code 503",
    "status code 504", "bad gateway", "service unavailable", "gateway timeout",
    "no route to host", "network is unreachable", "broken pipe", "eof occurred",
    "the connection pool", "operationalerror",
)


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the store is away (worth retrying later), rather than that the
    call itself was refused (a bad value, a permission)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = f"{type(e).__name__}: {e}".lower()
        if any(m in text for m in _MARKERS):
            return True
        e = e.__cause__ or e.__context__
    return False


def env_seconds(name: str, default: float) -> float:
    """Seconds from environment variable ``name``: ``default`` when unset or not a number,
    never below 0."""
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def wait_s() -> float:
    """Seconds the launcher waits, in all, for a store that is away at the end of a workload."""
    return env_seconds(WAIT_ENV, DEFAULT_WAIT_S)


def sqlite_busy_s() -> float:
    """How long one call waits for a SQLite file another writer holds: 20 s, but never past
    :func:`wait_s` (a file held locked for the whole launch is a store away: each call
    blocking 20 s on it made a launch told to wait 2 s take a minute), and at least 1 s (a
    script's own write holds the file for milliseconds)."""
    return max(1.0, min(20.0, wait_s()))


_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*):[^@\s/]*@", re.IGNORECASE)


def scrub(text: str) -> str:
    """``text`` with the password of any URI in it replaced (MLflow's and SQLAlchemy's errors
    quote the URL they called, credentials included)."""
    return _CREDENTIALS.sub(r"\1:***@", text)


def describe(exc: BaseException) -> str:
    """One line for a store error: its type and the first line of its message, without any
    password it quoted."""
    text = scrub(str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}"


def retrying(call: Callable[[], T], deadline: float, pause: float = 1.0) -> T:
    """``call()``, again after an outage until ``deadline`` (time.monotonic()); a refusal or
    an outage past the deadline is raised."""
    delay = pause
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_outage(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 5.0)
