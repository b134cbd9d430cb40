"""The Energy shares tab and the summary's attributed energy, in a real headless Chromium."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from synthetic import new_store, seed_workload

pytestmark = pytest.mark.browser
SHARES = "document.querySelector('#shares .js-plotly-plot')"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A co-located pair as the launcher's accounting leaves it: attributed energy on the
    runs, the power table on the parent (gpu0 at 400 W: A 300, B 80, other 20, idle 0)."""
    root = tmp_path_factory.mktemp("shares-store")
    uri = new_store(root)
    pair = seed_workload(uri, "acct", 1, ["A", "B"], points=120, hz=1.0,
                         artifact_root=root / "artifacts")
    client = MlflowClient(uri)
    parent = client.get_run(pair[0].run_id).data.tags["mlflow.parentRunId"]
    t = pair[0].start + np.arange(120.0)
    parts = []
    for party, run_id, watts in (("acct-1 A", pair[0].run_id, 300.0), ("acct-1 B", pair[1].run_id, 80.0),
                                 ("other", "", 20.0), ("idle", "", 0.0)):
        parts.append(pd.DataFrame({"time": t, "end": t + 1, "gpu": "gpu0", "gpu_uuid": "GPU-x",
                                   "party": party, "run_id": run_id, "power_w": watts,
                                   "energy_j": watts, "sm_share_pct": watts / 4}))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "power.parquet"
        pd.concat(parts).to_parquet(path, index=False)
        client.log_artifact(parent, str(path), "attribution")
    for seeded, joules in ((pair[0], 36_000.0), (pair[1], 9_600.0)):
        client.log_metric(seeded.run_id, "summary/attribution/gpu0/energy_j", joules)
        client.set_tag(seeded.run_id, "radtrack.attribution.gpu0", "process-sm-util")
        for key, value in {"radtrack.carbon.intensity_g_per_kwh": "400", "radtrack.carbon.pue": "1",
                           "radtrack.carbon.source": "--carbon-intensity"}.items():
            client.set_tag(seeded.run_id, key, value)
    return {"uri": uri, "root": root, "pair": pair}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


def test_energy_shares_stack_each_run_with_other_and_idle(web, app, store, snap) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("acct", exact=True).click()
    web.locator("#workload label", has_text="Workload 1").first.click()
    web.get_by_text("Energy shares", exact=True).click()
    web.wait_for_function(f"{SHARES} && {SHARES}._fullData && {SHARES}._fullData.length === 4")
    data = web.evaluate(f"""() => {SHARES}._fullData.map(t => ({{
        name: t.name, stack: t.stackgroup, y0: t.y[0], n: t.y.length}}))""")
    assert [d["name"] for d in data] == ["gpu0 acct-1 A", "gpu0 acct-1 B", "gpu0 other", "gpu0 idle"]
    assert {d["stack"] for d in data} == {"g0"} and all(d["n"] == 120 for d in data)
    assert [d["y0"] for d in data] == [300.0, 80.0, 20.0, 0.0]
    # the totals under it and the axis, in the vocabulary's words (issue 52)
    web.wait_for_selector(".shares-totals th")
    heads = web.locator(".shares-totals th").all_inner_texts()
    assert heads == ["part", "party", "energy_j (J)", "share_of_device_pct (% of the device's energy)"]
    title = web.evaluate(f"() => {SHARES}.layout.yaxis.title.text")
    assert title == "gpu0: run's share of GPU power (W)"
    snap(web, "energy-shares")


def test_summary_shows_attributed_and_gpu_energy(web, app, store) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("acct", exact=True).click()
    web.locator("#workload label", has_text="Workload 1").first.click()
    for seeded in store["pair"]:
        web.locator("#runs .run-name").get_by_text(seeded.run_name, exact=True).click()
    web.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
    headers = web.locator("#summary th").all_inner_texts()
    # each energy under its one name and unit (radtrack/vocab/meaning.py), what it is in its
    # tooltip (radtrack/frontend/columns.py)
    assert {"energy_j (J)", "gpu_energy_j (J)", "attribution",
            "co2e_g (g CO2e)"} <= {h.strip() for h in headers}, headers
    tip = web.locator("#summary th", has_text="gpu_energy_j").get_attribute("title")
    assert "whoever used them" in tip.lower()
    text = web.locator("#summary").inner_text()
    assert "36000" in text.replace(",", "") and "process-sm-util" in text
    assert "4" in text  # 36,000 J = 0.01 kWh at 400 g/kWh: 4 g CO2e
