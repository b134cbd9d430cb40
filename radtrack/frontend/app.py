"""The Dash app: ``radtrack ui`` (also ``python -m radtrack.frontend``).

It only reads the tracking store; saved views go to a local folder. Every script and
stylesheet is served by this process, so the page works without internet access.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from radtrack.analysis.data import missing_store, resolve_tracking_uri
from radtrack.frontend import (
    callbacks_chart,
    callbacks_export,
    callbacks_select,
    compare,
    health,
    shares,
    zoom_data,
)
from radtrack.frontend.data import DataSource
from radtrack.frontend.exposure import host_problem
from radtrack.frontend.layout import build_layout
from radtrack.frontend.page_shell import ShellDash, create_shell_app
from radtrack.frontend.port import port_problem
from radtrack.frontend.restore import page_query, restore
from radtrack.frontend.summaries import SummaryCache
from radtrack.frontend.views import ViewStore, default_views_dir
from radtrack.reader_args import ui_parser

ASSETS = Path(__file__).resolve().parent / "assets"


def create_app(tracking_uri: str | None = None, views_dir: Path | None = None,
               source: DataSource | None = None) -> ShellDash:
    """The page for one tracking store (None: ``MLFLOW_TRACKING_URI``, else sqlite:///mlflow.db)."""
    uri = resolve_tracking_uri(tracking_uri)
    source = source or DataSource(uri)
    views = ViewStore(views_dir or default_views_dir())
    # Not eager_loading: it loads every async component (MathJax, date pickers, ...) with
    # the page, 2.2 s to DOMContentLoaded against 0.6-0.8 s (docs/performance.md).
    # The page's scripts: plotly.js with two traces, no polyfill, the layout and callbacks
    # sent in the page after its scripts (page_shell.py).
    app = create_shell_app(__name__, ASSETS, title="radtrack", update_title=None,
                           on_error=health.on_error(uri))  # every failure in the banner

    summaries = SummaryCache(source)

    def page() -> object:
        # A function, so each page load lists the experiments that exist now; a shared
        # link's page comes with its state, chart and summary already in it (restore.py).
        query = page_query()
        try:
            experiments = source.experiments()
        except Exception as exc:  # noqa: BLE001 (the store down: the page says so, at once)
            return build_layout([], uri, views.names(), None, None, health.describe(uri, exc))
        state = restore(source, query, summaries)
        restored = query if state or not query else None
        return build_layout(experiments, uri, views.names(), state, restored)

    app.layout = page
    callbacks_select.register(app, source, views)
    callbacks_chart.register(app, source, summaries)
    callbacks_export.register(app, source)
    compare.register(app, source, summaries)
    shares.register(app, source.tracking_uri)
    zoom_data.register(app.server, source)
    health.register(app.server, uri)
    return app


def settle_heap() -> None:
    """Collect once, then exempt everything alive (modules, the app, MLflow's and Dash's
    objects) from later collections. A full collection of this process's start-up heap
    took 0.24 s and fell on whatever request allocated at that moment (a picker click at
    0.4-0.5 s); afterwards a full collection scans only what requests made since."""
    gc.collect()
    gc.freeze()


def check_store(uri: str) -> str | None:
    """Why ``uri`` cannot be shown, or None. A missing SQLite file would otherwise be created."""
    return missing_store(uri)


build_parser = ui_parser  # the arguments live in radtrack/reader_args.py (light to import)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 0 < args.port < 65536:
        print(f"radtrack ui: --port {args.port} is not a TCP port (1-65535)", file=sys.stderr)
        return 2
    warning, refusal = host_problem(args.host, args.debug)  # no access control of its own
    if refusal:
        print(f"radtrack ui: {refusal}", file=sys.stderr)
        return 2
    uri = resolve_tracking_uri(args.tracking_uri)
    problem = check_store(uri)
    if problem:
        print(f"radtrack ui: {problem}", file=sys.stderr)
        return 2
    busy = port_problem(args.host, args.port)  # before any "running on" line
    if busy:
        print(f"radtrack ui: {busy}", file=sys.stderr)
        return 2
    health.bound_requests()
    down = health.store_problem(uri)
    if down:  # the page starts all the same, and says so until the store answers
        print(f"radtrack ui: {down}", file=sys.stderr)
    app = create_app(uri, args.views_dir)
    settle_heap()
    print(f"radtrack ui: {uri} on http://{args.host}:{args.port}/", file=sys.stderr)
    if warning:
        print(f"radtrack ui: {warning}", file=sys.stderr)
    app.run(host=args.host, port=args.port, debug=args.debug)
    return 0
