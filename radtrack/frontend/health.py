"""A tracking store that cannot be read is said on the page, never hidden behind stale data.

Every callback that fails (a store gone, a run deleted, a bug) puts its error in the
banner at the top of the page (``app_on_error``); the picker's lists are emptied rather
than left showing the previous experiment's runs. A slow ping (``HEALTH_MS``) clears the
banner once the store answers again, and raises it when the store goes away while the
page is idle. ``radtrack ui`` bounds MLflow's HTTP requests (:func:`bound_requests`), so
a server that does not answer is an error within seconds, not minutes of retries.
"""

from __future__ import annotations

import logging
import time

from dash import ctx, html, set_props
from flask import Flask, Response
from mlflow import MlflowClient

from radtrack.frontend.picker import runs_hint

log = logging.getLogger(__name__)

HEALTH_MS = 5000  # assets/health.js
ROUTE = "/_radtrack/health"
#: MLflow's HTTP request limits for the page (MLflow's defaults: 120 s, 7 retries with backoff)
REQUEST_TIMEOUT_S = "5"
REQUEST_RETRIES = "0"
# outputs emptied when their callback fails: no list may keep another experiment's runs
_EMPTIED = {"workload.options": [], "runs.children": None}


def bound_requests() -> None:
    """Short timeouts for MLflow's HTTP store requests, unless the user set their own."""
    from radtrack.store.mlflow_client import bound_requests as bound

    bound(REQUEST_TIMEOUT_S, REQUEST_RETRIES)  # the one place that sets MLflow's variables


def describe(uri: str, exc: BaseException) -> str:
    """One line naming the store and the error."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > 300:
        text = text[:297] + "..."
    return f"Cannot read the tracking store {uri}: {text}"


def store_problem(uri: str) -> str | None:
    """Why the store cannot be read now (one cheap request), or None."""
    try:
        MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 (any failure is the user's to see)
        return describe(uri, exc)
    return None


def wait_for(uri: str, timeout_s: float) -> bool:
    """Whether the store answers within ``timeout_s`` (asked twice a second)."""
    deadline = time.monotonic() + timeout_s
    while store_problem(uri):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def banner(message: str | None) -> html.Div:
    """The banner at the top of the page (hidden when there is nothing to say)."""
    return html.Div(message or "", id="store-banner", role="alert", className="banner",
                    hidden=not message)


def on_error(uri: str):
    """Dash's ``on_error`` for every callback: the error goes to the banner."""

    def handle(exc: Exception) -> object:
        log.warning("callback failed: %s", exc, exc_info=exc)
        set_props("store-banner", {"children": describe(uri, exc), "hidden": False})
        outputs = ctx.outputs_list if isinstance(ctx.outputs_list, list) else [ctx.outputs_list]
        keys = [f"{o['id']}.{o['property']}" if isinstance(o, dict) else "" for o in outputs]
        if len(keys) == 1 and keys[0] in _EMPTIED:
            return _EMPTIED[keys[0]] if keys[0] != "runs.children" else runs_hint(None)
        return None  # everything else keeps what it shows, under the banner

    return handle


def register(server: Flask, uri: str) -> None:
    """``/_radtrack/health``: '' when the store answers, else its problem (assets/health.js
    asks every ``HEALTH_MS`` and shows it in the banner; a plain route, not a Dash
    callback, so it never counts among or delays the page's callback requests)."""

    @server.get(ROUTE)
    def health() -> Response:
        return Response(store_problem(uri) or "", mimetype="text/plain",
                        headers={"Cache-Control": "no-store"})
