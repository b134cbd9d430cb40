"""The page's HTML shell (frontend/page_shell.py): scripts swapped, layout asked for early,
and the fallback to Dash's own plotly.js when no bundle fits the installed plotly."""

from __future__ import annotations

import json
import logging
import re

from plotly.offline import get_plotlyjs_version

from radtrack.frontend import page_shell
from radtrack.frontend.app import create_app


def index(app) -> str:
    return app.server.test_client().get("/").get_data(as_text=True)


def config(html: str) -> dict:
    raw = re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(raw.group(1))


def test_index_has_no_polyfill_the_runtime_first_and_the_layout_request_in_the_head(tmp_path) -> None:
    html = index(create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views"))
    head, body = html.split("</head>", 1)
    scripts = re.findall(r'<script src="([^"]+)"', body)
    assert scripts and not [s for s in scripts if "polyfill" in s or "dash_table" in s]
    assert scripts[0].endswith("/assets/vendor/regenerator-runtime-0.14.1.js")
    assert any("react@" in s for s in scripts[1:])
    # The layout request starts in the head, before any script of the page's body.
    assert '"/_dash-layout"' in head and "window.fetch = function" in head
    version = get_plotlyjs_version()
    assert f'<link rel="preload" as="script" href="/assets/vendor/plotly-radtrack-{version}.min.js">' in head
    cfg = config(html)
    assert cfg["plotlyjs_url"] == f"/assets/vendor/plotly-radtrack-{version}.min.js"
    assert cfg["serve_locally"] is False  # the renderer reads it only to pick plotly.js


def test_the_vendored_bundle_is_served_and_names_its_version(tmp_path) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views")
    version = get_plotlyjs_version()
    answer = app.server.test_client().get(f"/assets/vendor/plotly-radtrack-{version}.min.js")
    assert answer.status_code == 200
    assert answer.get_data(as_text=True).startswith(f"/*! plotly.js v{version} ")


def test_a_bundle_for_another_plotly_falls_back_to_the_full_one(tmp_path, monkeypatch, caplog) -> None:
    assert page_shell.vendored_bundle("0.0.1") is None
    monkeypatch.setattr(page_shell, "get_plotlyjs_version", lambda: "0.0.1")
    with caplog.at_level(logging.WARNING, logger="radtrack.frontend.page_shell"):
        app = create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views")
    assert "plotly-radtrack-0.0.1.min.js" in caplog.text
    assert "scripts/build-plotly-bundle.sh" in caplog.text
    html = index(app)
    assert 'href="/_dash-component-suites/plotly/package_data/plotly.min.js"' in html
    cfg = config(html)
    assert cfg["serve_locally"] is True and "plotlyjs_url" not in cfg
