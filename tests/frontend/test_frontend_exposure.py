"""What the page exposes (radtrack/frontend/exposure.py): a warning for a non-loopback --host and no
--debug there, through the real CLI; 400 with a reason for malformed zoom requests; no
"Share chart..." to Plotly's cloud in any chart's config."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers import free_port as _free_port  # outside the ephemeral ports
from support import radtrack_cli
from synthetic import new_store, seed_workload

from radtrack.frontend.app import create_app
from radtrack.frontend.exposure import NO_CLOUD, host_problem, is_loopback


def _ui_stderr(uri: str, host: str) -> str:
    """Start ``radtrack ui --host HOST``, read stderr until it listens, stop it."""
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "radtrack", "ui", "--tracking-uri", uri,
                          "--host", host, "--port", str(port)], stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        assert p.stderr is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            lines.append(line)
            if " on http://" in line:
                lines.append(p.stderr.readline())  # the warning, if any, comes next
                break
    finally:
        p.terminate()
        p.wait(timeout=30)
    return "".join(lines)


def test_debug_with_a_network_host_is_refused(tmp_path: Path) -> None:
    uri = new_store(tmp_path)
    for host in ("0.0.0.0", "::", "10.1.2.3", "gpu01.example.org"):
        p = radtrack_cli("ui", "--tracking-uri", uri, "--host", host, "--debug")
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.strip() == (
            f"radtrack ui: --debug with --host {host}: Dash's debug mode (reloader, dev tools) "
            "must not be reachable from the network; use --debug only with --host 127.0.0.1")


def test_a_network_host_is_warned_about(tmp_path: Path) -> None:
    uri = new_store(tmp_path)
    err = _ui_stderr(uri, "0.0.0.0")
    assert ("radtrack ui: warning: --host 0.0.0.0 serves every experiment of the store to "
            "anyone who can reach this port: the page has no access control") in err, err
    assert "reverse proxy" in err and "docs/deployment.md" in err
    assert "warning" not in _ui_stderr(uri, "127.0.0.1")


def test_loopback_rule() -> None:
    for host in ("127.0.0.1", "127.0.1.1", "localhost", "::1", "[::1]", "LOCALHOST"):
        assert is_loopback(host) and host_problem(host, True) == (None, None)
    for host in ("0.0.0.0", "::", "192.168.1.5", "myhost"):
        assert not is_loopback(host)
        warning, refusal = host_problem(host, False)
        assert warning and refusal is None


@pytest.fixture
def zoom_client(tmp_path: Path):
    uri = new_store(tmp_path)
    (run,) = seed_workload(uri, "exp", 1, ["A"], metrics=["top/cpu_pct"], points=10,
                           artifact_root=tmp_path / "artifacts")
    app = create_app(uri, tmp_path / "views")
    return app.server.test_client(), run.run_id


def test_malformed_zoom_requests_are_400_with_a_reason(zoom_client) -> None:
    client, run = zoom_client
    good = {"runs": [run], "metrics": ["top/cpu_pct"], "xmode": "seconds", "smooth": 1,
            "logy": [], "rev": "x"}
    cases = [
        ("[]", "expected a JSON object"),
        ("not json", "expected a JSON object"),
        ({"runs": 5}, "runs must be a list of strings"),
        ({"runs": [1, 2], "metrics": ["a"]}, "runs must be a list of strings"),
        ({"runs": ["nope"], "metrics": ["a"]}, "run 'nope' not found"),
        ({**good, "metrics": "abc"}, "metrics must be a list of strings"),
        ({**good, "smooth": 1e400}, "smooth must be a number of points"),
        ({**good, "smooth": [1]}, "smooth must be a number of points"),
        ({**good, "xmode": "epoch"}, "xmode must be one of seconds, wall, step"),
        ({**good, "logy": 5}, "logy must be a list of strings"),
        ({**good, "rev": 5}, "rev must be a string"),
        ({**good, "x": {"a": 1}}, "x must be a list of two bounds"),
        ({**good, "x": [float("inf"), 2]}, "x bounds must be finite"),
        ({**good, "x": [[1], 2]}, "x bounds must be numbers or date strings"),
    ]
    for body, reason in cases:
        data = body if isinstance(body, str) else json.dumps(body)
        answer = client.post("/_radtrack/zoom", data=data, content_type="application/json")
        assert answer.status_code == 400, (body, answer.status_code)
        text = answer.get_data(as_text=True)
        assert reason in text and "Traceback" not in text, (body, text)
    # a well-formed query for another chart revision: 204, the browser keeps what it shows
    assert client.post("/_radtrack/zoom", json=good).status_code == 204


def _configs(node: object) -> list[dict]:
    found = []
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and isinstance(props.get("config"), dict):
            found.append(props["config"])
        for value in node.values():
            found += _configs(value)
    elif isinstance(node, list):
        for value in node:
            found += _configs(value)
    return found


def test_no_chart_offers_plotly_cloud(zoom_client) -> None:
    client, _ = zoom_client
    layout = client.get("/_dash-layout").get_json()
    configs = _configs(layout)
    assert len(configs) >= 3  # the chart and the two analysis graphs
    for config in configs:
        assert config["showSendToCloud"] is False and config["plotlyServerURL"] == ""
        assert "sendChartToCloud" in config["modeBarButtonsToRemove"]
        assert config.items() >= NO_CLOUD.items()
    page = client.get("/").get_data(as_text=True) + json.dumps(layout)
    assert "cloud.plotly" not in page and "plot.ly" not in page and "chart-studio" not in page
