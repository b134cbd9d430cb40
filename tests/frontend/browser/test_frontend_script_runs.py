"""A row's script runs (docs/mlflow-code.md) are found with the row, in a real Chromium:
listed under their row run, ticked like runs, their own ``loss`` overlaid with power."""

from __future__ import annotations

import pytest
from synthetic import new_store, seed_script_run, seed_workload
from test_frontend_browser import GD, choose_metric, wait_traces

pytestmark = pytest.mark.browser

METRICS = ("smi/gpu0/power_w", "top/cpu_pct")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return seed_store(tmp_path_factory)


def seed_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Workload exp-1 A, B; A's script made trial-0 and trial-1, B's pl-run in pl-exp."""
    root = tmp_path_factory.mktemp("script-runs-store")
    uri = new_store(root)
    a, b = seed_workload(uri, "exp", 1, ["A", "B"], metrics=METRICS, points=600, epochs=0)
    trial0 = seed_script_run(uri, a, "trial-0", offset_s=10, points=200)
    trial1 = seed_script_run(uri, a, "trial-1", offset_s=250, points=200)
    far = seed_script_run(uri, b, "pl-run", experiment="pl-exp", offset_s=5, points=300)
    return {"uri": uri, "root": root, "a": a, "b": b, "trials": [trial0, trial1], "far": far}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


def run_names(tab) -> list[str]:
    return tab.locator("#runs .run-name label").all_inner_texts()


def test_script_runs_are_listed_under_their_row_and_overlay_with_power(web, app, store) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("exp", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 1")
    workloads = web.locator("#workload label").all_inner_texts()
    assert len(workloads) == 1 and "Workload 1 · 2 runs + 3 script runs" in workloads[0], workloads
    web.locator("#workload label").first.click()
    web.wait_for_function("document.querySelectorAll('#runs .run-row').length === 5")
    assert [n.strip() for n in run_names(web)] == [
        "exp-1 A", "↳ trial-0", "↳ trial-1", "exp-1 B", "↳ pl-run · pl-exp"]
    for name in ("exp-1 A", "↳ trial-0"):
        web.locator("#runs .run-name").get_by_text(name, exact=True).click()
    web.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    # the script's run goes with its row's workload in the basket
    assert web.locator("#basket h3").all_inner_texts() == ["exp · Workload 1"]
    choose_metric(web, "smi/gpu0/power_w")
    choose_metric(web, "loss")
    wait_traces(web, 3)  # power of both, loss of the trial only (the row logged none)
    shown = web.evaluate(f"() => {GD}._fullData.map(t => [t.name, t.meta[1], t.x.length])")
    assert [s[:2] for s in shown] == [["exp-1 A · GPU time-slicing with 1 · sgemm.py", "smi/gpu0/power_w"],
                                      ["trial-0", "smi/gpu0/power_w"], ["trial-0", "loss"]]
    assert shown[1][2] == 200 and shown[2][2] == 5  # the trial's own span, its own epochs

    # the filter finds a script run by its name, shown with its row
    web.fill("#run-filter", "trial-1")
    web.press("#run-filter", "Enter")
    web.wait_for_function("document.querySelectorAll('#runs .run-row').length === 2")
    assert [n.strip() for n in run_names(web)] == ["exp-1 A", "↳ trial-1"]


def test_the_scripts_own_experiment_lists_it_with_its_row(web, app, store) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("pl-exp", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 1")
    label = web.locator("#workload label").first.inner_text()
    assert label.startswith("exp-1 B (row run in exp) · 1 run + 1 script run"), label
    web.locator("#workload label").first.click()
    web.wait_for_function("document.querySelectorAll('#runs .run-row').length === 2")
    assert [n.strip() for n in run_names(web)] == ["exp-1 B", "↳ pl-run · pl-exp"]
