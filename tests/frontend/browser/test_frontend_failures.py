"""Failures said where the user looks, in a real Chromium (issue 27): a link restored in
part names what it left out; a store that goes away is a banner naming it, not stale data."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from urllib.parse import quote

import pytest
from servers import free_port, stop_process
from test_frontend_browser import GD, wait_traces
from test_frontend_script_runs import seed_store

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return seed_store(tmp_path_factory)  # workload exp-1 A, B


def test_a_stale_and_malformed_link_is_restored_in_part_and_says_what_it_left_out(
        web, serve, store) -> None:
    app = serve(store["uri"], store["root"] / "views")
    a, b = store["a"], store["b"]
    link = (f"{app.url}?runs={a.run_id},{'f' * 32},{b.run_id}"
            f"&metric={quote('system/top/cpu_pct', safe='')}&metric=nosuch/key&smooth=abc")
    answers: list[int] = []
    web.on("response", lambda r: answers.append(r.status))
    web.goto(link)
    wait_traces(web, 2)  # both real runs, the metric given in MLflow's stored form
    names = web.evaluate(f"() => {GD}._fullData.map(t => [t.name, t.meta[1]])")
    shared = " · GPU time-slicing with 1 · sgemm.py"
    assert names == [["exp-1 A" + shared, "top/cpu_pct"], ["exp-1 B" + shared, "top/cpu_pct"]]
    message = web.locator("#link-msg").inner_text()
    assert "restored in part" in message
    assert f"run {'f' * 32} not in" in message and "nosuch/key" in message
    assert "smooth='abc'" in message, message
    assert web.locator("#link-msg").is_visible()
    assert all(status < 500 for status in answers), answers

    # a link whose every run is gone: an empty page that says why, no HTTP 500
    web.goto(f"{app.url}?runs={'e' * 32}&metric=top/cpu_pct")
    web.wait_for_function("document.querySelector('#link-msg').innerText.includes('eeee')")
    assert all(status < 500 for status in answers), answers


def _mlflow_server(backend: str, port: int, workdir) -> subprocess.Popen:
    args = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend,
            "--artifacts-destination", str(workdir / "artifacts"), "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1"]
    log = (workdir / f"mlflow-{port}.log").open("ab")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                            env={"MLFLOW_DISABLE_TELEMETRY": "true",
                                 "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
                                 **os.environ}, start_new_session=True)


@pytest.mark.slow
def test_a_store_that_goes_away_is_a_banner_and_clears_when_it_is_back(
        web, serve, store, monkeypatch, tmp_path) -> None:
    from radtrack.frontend import health

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", health.REQUEST_TIMEOUT_S)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", health.REQUEST_RETRIES)
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    server = _mlflow_server(store["uri"], port, tmp_path)
    try:
        assert health.wait_for(uri, 120.0), (tmp_path / f"mlflow-{port}.log").read_text()[-2000:]
        app = serve(uri, tmp_path / "views")
        web.goto(app.url)
        assert web.locator("#store-banner").is_hidden()
        web.locator("#experiment").get_by_text("exp", exact=True).click()
        web.wait_for_function("document.querySelectorAll('#workload label').length === 1")
        stop_process(server, signal.SIGTERM)
        app.source.listing_ttl_s = 0.0  # the next click reads the store again
        web.locator("#experiment").get_by_text("exp", exact=True).click()
        web.wait_for_function("!document.querySelector('#store-banner').hidden", timeout=15_000)
        text = web.locator("#store-banner").inner_text()
        assert f"Cannot read the tracking store {uri}" in text, text
        # a reload while the store is down: the page comes up at once and says so
        web.reload(timeout=15_000)
        assert uri in web.locator("#store-banner").inner_text()
        server = _mlflow_server(store["uri"], port, tmp_path)
        assert health.wait_for(uri, 120.0)
        web.wait_for_function("document.querySelector('#store-banner').hidden", timeout=15_000)
    finally:
        stop_process(server, signal.SIGTERM)
