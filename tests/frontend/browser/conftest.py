"""Browser fixtures: system Chromium through Playwright, the app served from a thread."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from radtrack.frontend.app import create_app
from radtrack.frontend.data import DataSource

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """Headless system Chromium (Playwright's own browser downloads are never used)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"browser: {CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser
        browser.close()


@dataclass
class LiveApp:
    url: str
    source: DataSource
    views_dir: Path


@pytest.fixture(scope="session")
def serve():
    """Start ``create_app`` for a store on 127.0.0.1 and a free port; stopped at session end."""
    servers = []
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    def start(tracking_uri: str, views_dir: Path, refresh_s: float = 1.0) -> LiveApp:
        source = DataSource(tracking_uri, refresh_s=refresh_s, listing_ttl_s=1.0)
        app = create_app(tracking_uri, views_dir, source=source)
        server = make_server("127.0.0.1", 0, app.server, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return LiveApp(f"http://127.0.0.1:{server.server_port}/", source, views_dir)

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture
def web(chromium):
    """A fresh browser tab (its own context: no shared storage between tests)."""
    context = chromium.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    yield tab
    context.close()


@pytest.fixture
def snap():
    """Save a full-page screenshot under test-artifacts/ (git-ignored)."""

    def take(tab, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True)
        return path

    return take
