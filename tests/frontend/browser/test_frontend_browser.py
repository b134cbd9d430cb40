"""The page in a real headless Chromium: pick, plot, zoom, export, views, URL, live runs."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import urlparse

import pytest
from mlflow import MlflowClient
from synthetic import append_samples, new_store, seed_workload

pytestmark = pytest.mark.browser

METRICS = ("smi/gpu0/power_w", "dcgm/gpu0/sm_active_pct", "top/cpu_pct")
POINTS = 6000  # 10 minutes at 10 Hz: more than one trace's point budget
GD = "document.querySelector('#chart .js-plotly-plot')"
SHARED = " · GPU time-slicing with 1 · sgemm.py"  # a seeded pair's label after its name


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("browser-store")
    uri = new_store(root)
    artifacts = root / "artifacts"
    pair = seed_workload(uri, "exp", 1, ["A", "B"], metrics=METRICS, points=POINTS, hz=10.0,
                         history=False, artifact_root=artifacts)
    live = seed_workload(uri, "exp", 2, ["A"], metrics=METRICS, points=40, status="RUNNING",
                         start=1_700_100_000.0, artifact_root=artifacts, epochs=0)
    seed_workload(uri, "other", 1, ["A"], metrics=METRICS, points=100, artifact_root=artifacts)
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name("exp").experiment_id
    plain = client.create_run(exp_id, run_name="notebook run", start_time=1_700_200_000_000)
    client.log_metric(plain.info.run_id, "accuracy", 0.9, step=1)
    client.set_terminated(plain.info.run_id)
    return {"uri": uri, "pair": pair, "live": live[0], "root": root}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


def pick(tab, url: str, experiment: str, workload: str, runs: list[str]) -> None:
    tab.goto(url)
    tab.locator("#experiment").get_by_text(experiment, exact=True).click()
    tab.locator("#workload label", has_text=workload).first.click()
    for name in runs:
        tick(tab, name)
    tab.wait_for_function(f"document.querySelectorAll('#basket li').length === {len(runs)}")


def tick(tab, run_name: str) -> None:
    # The name itself: another run's info popover also mentions it (radtrack.colocated_with).
    tab.locator("#runs .run-name").get_by_text(run_name, exact=True).click()


def choose_metric(tab, key: str) -> None:
    group, short = key.split("/", 1) if "/" in key else ("script", key)
    tab.locator("#metrics").get_by_text(short, exact=True).click()


def traces(tab) -> list[dict]:
    return tab.evaluate(f"""() => {GD}._fullData.map(t => ({{
        name: t.name, n: t.x.length, x0: t.x[0], x1: t.x[t.x.length - 1]}}))""")


def wait_traces(tab, count: int) -> None:
    tab.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === {count}")


def test_pick_two_runs_plot_zoom_and_export(web, app, store, snap) -> None:
    requests: list[str] = []
    web.on("request", lambda r: requests.append(r.url))
    pick(web, app.url, "exp", "Workload 1", ["exp-1 A", "exp-1 B"])
    choose_metric(web, "smi/gpu0/power_w")
    wait_traces(web, 2)
    before = traces(web)
    # each run's label: its name, how it shared the GPU, its script (radtrack/frontend/colocation.py)
    assert [t["name"] for t in before] == ["exp-1 A" + SHARED, "exp-1 B" + SHARED]
    assert all(t["n"] <= 1500 for t in before)  # downsampled to the point budget
    assert all(t["x0"] == pytest.approx(0, abs=1e-3) and t["x1"] == pytest.approx(599.9) for t in before), before

    # Zoom as a mouse drag would: the server re-reads 60 s at full resolution.
    web.evaluate(f"() => Plotly.relayout({GD}, {{'xaxis.range': [100.05, 160.05]}})")
    web.wait_for_function(f"{GD}._fullData[0].x.length < 1000")
    zoomed = traces(web)
    assert [t["n"] for t in zoomed] == [602, 602]  # 600 samples + one neighbour each side
    assert zoomed[0]["x0"] == pytest.approx(100.0) and zoomed[0]["x1"] == pytest.approx(160.1)
    assert web.evaluate(f"() => {GD}.layout.xaxis.range") == [100.05, 160.05]
    snap(web, "frontend-zoomed")

    with web.expect_download() as download:
        web.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert list(rows[0]) == ["run", "run_id", "node", "metric", "label", "scope", "unit", "time",
                             "seconds", "unix_time", "value"]
    assert {r["node"] for r in rows} == {"0"}  # one-node runs
    assert {(r["label"], r["scope"], r["unit"]) for r in rows} == {("GPU power (W)", "device", "W")}
    assert len(rows) == 2 * 600
    # runs by display name (as in the legend), time as ISO 8601 and as seconds since start
    assert {r["run"] for r in rows} == {"exp-1 A", "exp-1 B"}
    assert {r["run_id"] for r in rows} == {r.run_id for r in store["pair"]}
    assert {r["metric"] for r in rows} == {"smi/gpu0/power_w"}
    first = rows[0]
    assert first["time"] == "2023-11-14T22:15:00.100Z"
    assert float(first["seconds"]) == pytest.approx(100.1)

    with web.expect_download() as download:
        web.click("#export-svg")
    assert b"<svg" in Path(download.value.path()).read_bytes()[:300]

    hosts = {urlparse(u).netloc for u in requests}
    assert hosts == {urlparse(app.url).netloc}, "every asset must be served by the app itself"


def test_zoom_data_reaches_the_plot_decoded_and_every_subplot_follows(web, app) -> None:
    """Zoom data goes server -> "chart-figure" store (a Patch of base64 arrays) -> clientside
    decode -> the graph. Each zoom, a second zoom, a y-only zoom and a reset must show the
    right window in every subplot, and the plot must hold typed arrays that a re-applied
    figure does not recompute (what keeps a zoom to one redraw of the new data)."""
    pick(web, app.url, "exp", "Workload 1", ["exp-1 A", "exp-1 B"])
    choose_metric(web, "smi/gpu0/power_w")
    choose_metric(web, "top/cpu_pct")
    wait_traces(web, 4)
    assert web.evaluate(f"() => [...new Set({GD}._fullData.map(t => t.xaxis))]") == ["x"]

    def zoom_to(lo: float, hi: float) -> list[dict]:
        web.evaluate(f"() => Plotly.relayout({GD}, {{'xaxis.range': [{lo}, {hi}]}})")
        web.wait_for_function(f"{GD}._fullData.every(t => t.x[0] >= {lo} - 0.2 && t.x[0] <= {lo})")
        return traces(web)

    posts: list[str] = []
    web.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    for lo, hi in ((100.05, 160.05), (300.05, 330.05)):
        posts.clear()
        zoomed = zoom_to(lo, hi)
        # One request to the zoom route, no Dash callback on the way to the new data.
        assert [urlparse(u).path for u in posts] == ["/_radtrack/zoom"], posts
        assert len(zoomed) == 4
        n = round((hi - lo) * 10)  # every sample of the window, plus one neighbour each side
        assert [t["n"] for t in zoomed] == [n + 2] * 4, zoomed
        assert all(t["x0"] == pytest.approx(lo - 0.05, abs=0.01)
                   and t["x1"] == pytest.approx(hi + 0.05, abs=0.01)
                   for t in zoomed), zoomed
    assert web.evaluate(f"() => {GD}.layout.xaxis.range") == [300.05, 330.05]

    kinds = web.evaluate(f"""() => {GD}.data.map(t =>
        Object.prototype.toString.call(t.x) + ' ' + Object.prototype.toString.call(t.y))""")
    assert set(kinds) == {"[object Float64Array] [object Float32Array]"}
    unchanged = web.evaluate(f"""async () => {{
        const gd = {GD}; const before = gd.calcdata;
        await Plotly.react(gd, {{data: gd.data, layout: Object.assign({{}}, gd.layout)}});
        return before === gd.calcdata; }}""")
    assert unchanged, "re-applying the same figure recomputed the traces"

    # A y-only zoom re-samples nothing and leaves the x window alone.
    web.evaluate(f"() => Plotly.relayout({GD}, {{'yaxis2.range': [0, 50]}})")
    web.wait_for_timeout(500)
    assert traces(web)[0]["x0"] == pytest.approx(300.0, abs=0.01)

    # Double-click (autorange) goes back to the whole runs, downsampled again.
    web.evaluate(f"() => Plotly.relayout({GD}, {{'xaxis.autorange': true}})")
    web.wait_for_function(f"{GD}._fullData.every(t => t.x[0] < 1)")
    reset = traces(web)
    assert all(t["x1"] == pytest.approx(599.9, abs=0.01) and t["n"] <= 1500 for t in reset), reset


def test_url_reproduces_the_selection_and_view(web, chromium, app) -> None:
    pick(web, app.url, "exp", "Workload 1", ["exp-1 A", "exp-1 B"])
    choose_metric(web, "smi/gpu0/power_w")
    choose_metric(web, "top/cpu_pct")
    web.locator("#xmode").get_by_text("wall clock").click()
    wait_traces(web, 4)
    web.wait_for_function("location.search.includes('x=wall')")
    link = web.url
    assert "runs=" in link and "metric=top%2Fcpu_pct" in link

    web.close()  # the link is opened as if pasted into a fresh tab
    other = chromium.new_page(viewport={"width": 1500, "height": 1000})
    answers: list[tuple[str, int]] = []
    other.on("response", lambda r: answers.append((r.request.post_data or "", r.status))
             if "_dash-update-component" in r.url else None)
    other.goto(link)
    wait_traces(other, 4)
    # The page arrived with the chart (and summary) in it: not one callback request.
    other.wait_for_load_state("networkidle")
    assert answers == [], answers
    assert other.evaluate(f"() => {GD}.layout.xaxis.type") == "date"
    other.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    assert other.locator("#metrics input:checked").count() == 2
    other.close()


def test_save_and_reload_a_named_view(web, app) -> None:
    pick(web, app.url, "exp", "Workload 1", ["exp-1 A", "exp-1 B"])
    choose_metric(web, "dcgm/gpu0/sm_active_pct")
    wait_traces(web, 2)
    web.fill("#view-name", "sm overlay")
    web.click("#save-view")
    web.wait_for_function("document.querySelector('#view-msg').innerText.includes('Saved view')")
    assert (app.views_dir / "sm overlay.json").is_file()

    web.goto(app.url)  # a fresh page: nothing selected
    web.wait_for_selector("#experiment label")
    assert web.locator("#basket li").count() == 0
    web.click("#views")
    web.get_by_text("sm overlay", exact=True).click()
    web.click("#load-view")
    wait_traces(web, 2)
    # The chart no longer waits for the basket (both follow from the restored selection).
    web.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    assert [t["name"] for t in traces(web)] == ["exp-1 A" + SHARED, "exp-1 B" + SHARED]


def test_bad_view_name_gets_one_clear_message(web, app) -> None:
    web.goto(app.url)
    web.fill("#view-name", "../escape")
    web.click("#save-view")
    web.wait_for_function("document.querySelector('#view-msg').innerText.includes('view name')")
    assert not (app.views_dir.parent / "escape.json").exists()


def test_basket_spans_experiments_and_filter_finds_runs(web, app, snap) -> None:
    pick(web, app.url, "exp", "Workload 1", ["exp-1 B"])
    web.locator("#experiment").get_by_text("other", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 1")
    web.locator("#workload label", has_text="Workload 1").click()
    tick(web, "other-1 A")
    web.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    groups = web.locator("#basket h3").all_inner_texts()
    assert groups == ["exp · Workload 1", "other · Workload 1"]

    web.locator("#experiment").get_by_text("exp", exact=True).click()
    web.fill("#run-filter", "batch-size=128")
    web.press("#run-filter", "Enter")
    # exp has two workloads; only Workload 1 has a run with batch-size 128 (its row B)
    web.wait_for_function("document.querySelectorAll('#workload label').length === 1 && "
                          "document.querySelector('#workload').innerText.includes('2 runs')")
    web.locator("#workload label").first.click()
    # the run list has switched to exp (the other experiment's row may still be shown)
    web.wait_for_function("(r => r.length === 1 && r[0].innerText.includes('exp-'))"
                          "(document.querySelectorAll('#runs .run-row'))")
    assert "exp-1 B" in web.locator("#runs .run-row").inner_text()

    web.click("#clear")
    web.wait_for_function("document.querySelectorAll('#basket li').length === 0")


def test_solo_runs_appear_as_one_run_workloads(web, app) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text("exp", exact=True).click()
    web.locator("#workload label", has_text="notebook run").click()
    tick(web, "notebook run")
    choose_metric(web, "accuracy")
    wait_traces(web, 1)


def test_running_run_refreshes_without_losing_the_zoom(web, app, store) -> None:
    live = store["live"]
    pick(web, app.url, "exp", "Workload 2", ["exp-2 A"])
    choose_metric(web, "top/cpu_pct")
    wait_traces(web, 1)
    assert traces(web)[0]["n"] == 40
    web.evaluate(f"() => Plotly.relayout({GD}, {{'xaxis.range': [5, 200]}})")
    web.wait_for_function(f"{GD}._fullData[0].x[0] >= 4")
    append_samples(store["uri"], live, first=40, count=60, metrics=["top/cpu_pct"])
    web.wait_for_function(f"{GD}._fullData[0].x[{GD}._fullData[0].x.length - 1] >= 99", timeout=30_000)
    assert web.evaluate(f"() => {GD}.layout.xaxis.range") == [5, 200]


def test_unzoomed_running_run_grows_the_axis(web, app, store) -> None:
    """The unzoomed chart's explicit x range is the runs' extent: a refresh with new samples
    widens it, so a live run is never cut at the range of its first drawing."""
    live = store["live"]
    pick(web, app.url, "exp", "Workload 2", ["exp-2 A"])
    choose_metric(web, "top/cpu_pct")
    wait_traces(web, 1)
    before = web.evaluate(f"() => {GD}.layout.xaxis.range[1]")
    append_samples(store["uri"], live, first=100, count=60, metrics=["top/cpu_pct"])
    web.wait_for_function(f"{GD}.layout.xaxis.range[1] >= {before} + 50", timeout=30_000)
    x = web.evaluate(f"() => Array.from({GD}._fullData[0].x)")
    assert web.evaluate(f"() => {GD}.layout.xaxis.range[1]") == pytest.approx(max(x))
