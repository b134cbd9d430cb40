"""The Summary table a person can read (issue 38): in a box of 774-900 px its run column stays
in view while the table scrolls sideways, headers carry units, a blank cell says why and a
flagged figure is marked (radtrack/frontend/summaries.py, assets/summary_table.js, assets/style.css)."""

from __future__ import annotations

import pytest
from synthetic import new_store, seed_workload

pytestmark = pytest.mark.browser

METRICS = ("smi/gpu0/power_w", "smi/gpu0/gpu_util_pct", "smi/gpu0/mem_used_mib", "smi/gpu0/temp_c",
           "smi/gpu0/sm_clock_mhz", "dcgm/gpu0/sm_active_pct", "top/cpu_pct", "top/proc/rss_mib")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("summary-layout")
    uri = new_store(root)
    gpu = seed_workload(uri, "layout", 1, ["A"], metrics=METRICS, points=300, hz=10.0,
                        history=False, artifact_root=root / "artifacts")
    # a CPU-only run (no Devices, top only): its energy cells are blank, and say why
    cpu = seed_workload(uri, "layout", 2, ["A"], metrics=("top/cpu_pct", "top/proc/rss_mib"),
                        points=5, hz=1.0, history=False, start=1_700_001_000.0,
                        artifact_root=root / "artifacts")
    from mlflow import MlflowClient

    MlflowClient(uri).set_tag(cpu[0].run_id, "radtrack.devices", "-")
    return {"uri": uri, "root": root, "runs": [*gpu, *cpu]}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


@pytest.mark.parametrize("width", [774, 900])
def test_run_column_stays_in_view_and_headers_carry_units(chromium, app, width: int) -> None:
    # room for the picker column (280 px below 1600 px wide) beside the box
    context = chromium.new_context(viewport={"width": width + 400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    try:
        tab.goto(app.url)
        tab.locator("#experiment").get_by_text("layout", exact=True).click()
        for workload, name in (("Workload 1", "layout-1 A"), ("Workload 2", "layout-2 A")):
            tab.locator("#workload label", has_text=workload).first.click()
            tab.locator("#runs .run-name").get_by_text(name, exact=True).click()
        tab.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
        # the Summary's box at the width under test
        tab.evaluate(f"document.getElementById('summary').style.width = '{width}px'")
        box = tab.evaluate("document.getElementById('summary').getBoundingClientRect().width")
        assert abs(box - width) < 2
        host = "document.getElementById('summary')"
        assert tab.evaluate(f"{host}.scrollWidth > {host}.clientWidth"), "the table fits: nothing to test"
        first = "document.querySelector('#summary tbody tr td')"
        left = tab.evaluate(f"{first}.getBoundingClientRect().left")
        tab.evaluate(f"{host}.scrollLeft = {host}.scrollWidth")
        tab.wait_for_function(f"{host}.scrollLeft > 0")
        # scrolled to the far right, the run's cell is where it was and nothing covers it
        assert abs(tab.evaluate(f"{first}.getBoundingClientRect().left") - left) < 1
        assert tab.evaluate(f"getComputedStyle({first}).position") == "sticky"
        cell = tab.evaluate(f"""(() => {{ const r = {first}.getBoundingClientRect();
            return document.elementFromPoint(r.left + 5, r.top + r.height / 2) === {first}; }})()""")
        assert cell
        headers = tab.locator("#summary th").all_inner_texts()
        assert any(h.startswith("duration_s") and "(s)" in h for h in headers), headers
        assert any("power_w_mean" in h and "(W)" in h for h in headers), headers
        assert any(h.startswith("cpu_pct_mean") and "% of all cores" in h for h in headers), headers
        # samples' header carries its unit too: "samples (readings)"
        assert "checks" in headers and "samples (readings)" in headers, headers
        assert not [h for h in headers if h.startswith("_")]  # the hidden columns stay hidden
        # the CPU-only run's blank energy cell says why
        row = tab.locator("#summary tbody tr", has_text="layout-2 A")
        ids = tab.evaluate("window.document.getElementById('summary').__radtrackTable.columns"
                           ".filter(c => !c.id.startsWith('_')).map(c => c.id)")
        energy = row.locator("td").nth(ids.index("energy_j"))
        assert "CPU-only run" in (energy.get_attribute("title") or "")
    finally:
        context.close()
