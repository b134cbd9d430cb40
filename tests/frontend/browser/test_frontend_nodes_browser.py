"""A two-node run picked in a real headless Chromium: the run list says its nodes, the metric
list names a metric once, and the chart draws it once per node, each in its own legend entry
(radtrack/frontend/nodes.py; the store's two-node run: tests/node_runs.py)."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from node_runs import KEYS, POINTS, add_node
from synthetic import new_store, seed_workload

pytestmark = pytest.mark.browser

GD = "document.querySelector('#chart .js-plotly-plot')"


@pytest.fixture(scope="module")
def app(serve, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("nodes-page")
    uri = new_store(root)
    (run,) = seed_workload(uri, "nodes", 1, ["A"], metrics=KEYS, points=POINTS, epochs=0,
                           artifact_root=root / "artifacts")
    add_node(MlflowClient(tracking_uri=uri), run.run_id, run.start, 1)
    return serve(uri, root / "views")


def test_a_two_node_run_is_one_line_per_node(web, app) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("nodes", exact=True).click()
    web.locator("#workload label", has_text="Workload 1").first.click()
    web.locator("#runs .run-name").get_by_text("nodes-1 A · 2 nodes", exact=True).click()
    metrics = web.locator("#metrics")
    metrics.get_by_text("runs over 2 nodes: each metric is drawn once per node").wait_for()
    assert metrics.get_by_text("gpu0/power_w", exact=True).count() == 1
    assert metrics.get_by_text("node1/smi/gpu0/power_w").count() == 0
    metrics.get_by_text("gpu0/power_w", exact=True).click()
    web.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === 2")
    names = web.evaluate(f"{GD}._fullData.map(t => t.name)")
    assert [n.rsplit(" · ", 1)[1] for n in names] == ["node 0", "node 1"]
    legend = web.locator("#chart .legend .traces")
    assert legend.count() == 2
    assert "node 1" in legend.nth(1).text_content()
