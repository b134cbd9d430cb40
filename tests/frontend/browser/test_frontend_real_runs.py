"""The page on runs recorded by the real launcher (``python -m radtrack -l top ...``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import new_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GD = "document.querySelector('#chart .js-plotly-plot')"
SCRIPT = """
import time
from radtrack.script.benchmark import RADTBenchmark

with RADTBenchmark() as run:
    for epoch in range(4):
        time.sleep(0.4)
        run.log_metric("loss", 1.0 / (epoch + 1), epoch=epoch)
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("real-runs")
    uri = new_store(root)
    script = root / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(root / ".radtrack"),
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    for batch in ("32", "64"):
        proc = subprocess.run([sys.executable, "-m", "radtrack", "-e", "real", "-l", "top",
                               "--interval", "0.2", str(script), "--batch-size", batch],
                              cwd=root, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return uri


def test_two_real_runs_overlay_listener_and_script_metrics(web, serve, recorded, tmp_path: Path,
                                                           snap) -> None:
    app = serve(recorded, tmp_path / "views")
    web.goto(app.url)
    web.locator("#experiment").get_by_text("real", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 2")
    for number in (1, 2):  # each CLI launch is a one-run workload, numbered in turn
        web.locator("#workload label", has_text=f"Workload {number}").click()
        web.locator("#runs .run-name").get_by_text(f"real-{number} A", exact=True).click()
        web.wait_for_function(f"document.querySelectorAll('#basket li').length === {number}")
    web.locator("#metrics").get_by_text("cpu_pct", exact=True).click()
    web.locator("#metrics").get_by_text("loss", exact=True).click()
    web.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === 4")
    losses = web.evaluate(f"""() => {GD}._fullData.filter(t => t.meta[1] === 'loss')
                                   .map(t => Array.from(t.y))""")
    # the chart ships values as float32
    assert losses == [pytest.approx([1.0, 0.5, 1 / 3, 0.25], rel=1e-6)] * 2
    cpu_points = web.evaluate(f"""() => {GD}._fullData.filter(t => t.meta[1] === 'top/cpu_pct')
                                       .map(t => t.x.length)""")
    assert all(n >= 3 for n in cpu_points)  # sampled every 0.2 s over a ~2 s run
    snap(web, "frontend-real-runs")
