"""The page's HTML shell (radtrack/frontend/page_shell.py): scripts swapped, layout asked for early,
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
    # The layout and the callbacks come in the page, before the renderer starts, with the
    # script that hands them over in the head.
    layout_at = body.index('<script id="_radtrack-layout" type="application/json">')
    callbacks_at = body.index('<script id="_radtrack-dependencies" type="application/json">')
    assert max(layout_at, callbacks_at) < body.index('<script id="_dash-renderer"')
    assert '"/_dash-layout": "_radtrack-layout"' in head and "window.fetch = function" in head
    # plotly.js is the last script before the renderer starts (the charts draw on mount),
    # after the chart component's code (an asset).
    version = get_plotlyjs_version()
    assert scripts[-1] == f"/assets/vendor/plotly-radtrack-{version}.min.js"
    assert [s for s in scripts if "/assets/chart.js" in s]
    assert body.index(scripts[-1]) < body.index('<script id="_dash-renderer"')
    assert config(html)["serve_locally"] is True


def test_the_vendored_bundle_is_served_and_names_its_version(tmp_path) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views")
    version = get_plotlyjs_version()
    answer = app.server.test_client().get(f"/assets/vendor/plotly-radtrack-{version}.min.js")
    assert answer.status_code == 200
    # V8 compiles it while it streams in (scripts/build-plotly-bundle.sh), then the licence.
    first, second = answer.get_data(as_text=True).split("\n", 2)[:2]
    assert first == "//# allFunctionsCalledOnLoad"
    assert second.startswith(f"/*! plotly.js v{version} ")


def test_a_bundle_for_another_plotly_falls_back_to_the_full_one(tmp_path, monkeypatch, caplog) -> None:
    assert page_shell.vendored_bundle("0.0.1") is None
    monkeypatch.setattr(page_shell, "get_plotlyjs_version", lambda: "0.0.1")
    with caplog.at_level(logging.WARNING, logger="radtrack.frontend.page_shell"):
        app = create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views")
    assert "plotly-radtrack-0.0.1.min.js" in caplog.text
    assert "scripts/build-plotly-bundle.sh" in caplog.text
    html = index(app)
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts[-1] == "/_dash-component-suites/plotly/package_data/plotly.min.js"
    assert not [s for s in scripts if "plotly-radtrack" in s]


def test_the_page_carries_its_links_layout_and_the_callbacks(tmp_path) -> None:
    from synthetic import new_store, seed_workload

    uri = new_store(tmp_path)
    runs = seed_workload(uri, "shell", 1, ["A", "B"], metrics=("smi/gpu0/power_w",), points=50,
                         artifact_root=tmp_path / "artifacts")
    app = create_app(uri, tmp_path / "views")
    ids = ",".join(r.run_id for r in runs)
    html = index_of(app, f"/?experiment=shell&runs={ids}&metric=smi%2Fgpu0%2Fpower_w")
    layout = embedded(html, "_radtrack-layout")
    props = component_props(layout)
    assert props["selection"]["data"] == [r.run_id for r in runs]
    assert props["restored"]["data"] == f"experiment=shell&runs={ids}&metric=smi%2Fgpu0%2Fpower_w"
    figure = props["chart"]["figure"]
    assert [t["meta"][0] for t in figure["data"]] == [r.run_id for r in runs]
    summary = props["summary-data"]["data"]
    assert [row["run"] for row in summary["rows"]] == ["shell-1 A", "shell-1 B"]
    callbacks = embedded(html, "_radtrack-dependencies")
    assert any("summary-data.data" in c["output"] for c in callbacks)
    # The same as the server's own answers to the renderer's requests.
    client = app.server.test_client()
    assert callbacks == client.get("/_dash-dependencies").get_json()
    plain = embedded(index_of(app, "/"), "_radtrack-layout")
    assert plain == client.get("/_dash-layout").get_json()


def component_props(node: object) -> dict[str, dict]:
    """Every component's props in a layout (as JSON), by id."""
    found: dict[str, dict] = {}
    if isinstance(node, dict):
        props = node.get("props", {})
        if "namespace" in node and isinstance(props.get("id"), str):
            found[props["id"]] = props
        for value in props.values():
            found.update(component_props(value))
    elif isinstance(node, list):
        for item in node:
            found.update(component_props(item))
    return found


def index_of(app, path: str) -> str:
    return app.server.test_client().get(path).get_data(as_text=True)


def embedded(html: str, element_id: str) -> object:
    raw = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(raw.group(1))


def test_the_page_is_sent_before_its_layout_is_built(tmp_path, monkeypatch) -> None:
    """The first part (scripts included) leaves before the layout is built: the browser
    fetches the scripts while the server works."""
    app = create_app(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "views")
    built: list[str] = []
    real = app.get_layout

    def layout():
        built.append("layout")
        return real()

    monkeypatch.setattr(app, "get_layout", layout)
    response = app.server.test_client().get("/", buffered=False)
    chunks = response.response  # the body, part by part, as the server sends it
    first = next(iter(chunks))
    first = first.decode() if isinstance(first, bytes) else first
    assert "dash_core_components" in first and '<script id="_radtrack-layout"' not in first
    assert built == []  # not built yet when the first part is out
    rest = "".join(c.decode() if isinstance(c, bytes) else c for c in chunks)
    assert built == ["layout"] and '<script id="_radtrack-layout"' in rest
    response.close()
