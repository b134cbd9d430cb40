"""Issue 27's page in a real headless Chromium: co-location in the labels, attributed power,
select-all, the Compare tab against the stored summaries, exports opened and checked, the
zoom in links and saved views, GPUs overlaid, live durations, keyboard tabs, who launched
and which launch (issue 28), and the layout at 1280 and 900 px."""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pdf_text import pdf_text
from synthetic import new_store, seed_attribution, seed_workload, tag_launch

pytestmark = pytest.mark.browser

GD = "document.querySelector('#chart .js-plotly-plot')"
EXP = "h100-colocation"
METRICS = ["smi/gpu0/power_w", "smi/gpu1/power_w", "top/cpu_pct"]
POINTS = 120


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Solo, time-shared (accounted: A 300 W, B 120 W), MPS 50 % (accounted: 250 / 200 W)
    and MIG workloads of two launches by two users, and a run still going."""
    root = tmp_path_factory.mktemp("answers-store")
    uri = new_store(root)
    art = root / "artifacts"
    runs = {"solo": seed_workload(uri, EXP, 1, ["A"], metrics=METRICS, points=POINTS,
                                  artifact_root=art),
            "shared": seed_workload(uri, EXP, 2, ["A", "B"], metrics=METRICS, points=POINTS,
                                    artifact_root=art, start=1_700_000_400.0),
            "mps": seed_workload(uri, EXP, 3, ["A", "B"], metrics=METRICS, points=POINTS,
                                 artifact_root=art, collocation="mps:50", start=1_700_000_800.0),
            "mig": seed_workload(uri, EXP, 4, ["A", "B"], metrics=METRICS, points=POINTS,
                                 artifact_root=art, collocation="3g.40gb",
                                 start=1_700_001_200.0)}
    seed_attribution(uri, runs["shared"], [300.0, 120.0], points=POINTS)
    seed_attribution(uri, runs["mps"], [250.0, 200.0], points=POINTS)
    tag_launch(uri, runs["solo"] , "alice", "aaaa1111")
    tag_launch(uri, runs["shared"], "alice", "aaaa1111")
    tag_launch(uri, runs["mps"], "bob", "bbbb2222")
    tag_launch(uri, runs["mig"], "bob", "bbbb2222")
    runs["live"] = seed_workload(uri, "live", 1, ["A"], metrics=METRICS, points=30,
                                 status="RUNNING", start=time.time() - 20, artifact_root=art,
                                 epochs=0)
    return {"uri": uri, "root": root, "runs": runs}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


def open_workload(tab, url: str, workload: str, experiment: str = EXP) -> None:
    tab.goto(url)
    tab.locator("#experiment").get_by_text(experiment, exact=True).click()
    tab.locator("#workload label", has_text=workload).first.click()
    tab.wait_for_selector("#runs .run-row")


def select_workload(tab, url: str, workload: str, count: int) -> None:
    open_workload(tab, url, workload)
    tab.click("#select-workload")
    tab.wait_for_function(f"document.querySelectorAll('#basket li').length === {count}")


def choose(tab, short: str) -> None:
    tab.locator("#metrics").get_by_text(short, exact=True).click()


def wait_traces(tab, count: int) -> None:
    tab.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === {count}")


def trace_info(tab) -> list[dict]:
    return tab.evaluate(f"""() => {GD}._fullData.map(t => ({{
        name: t.name, yaxis: t.yaxis, y0: t.y[0], n: t.x.length, hover: t.hovertemplate,
        dash: t.line.dash}}))""")


def test_each_runs_label_says_its_workload_colocation_and_script(web, app, store, snap) -> None:
    expected = {"Workload 1": ["h100-colocation-1 A · solo · sgemm.py"],
                "Workload 2": [f"h100-colocation-2 {x} · GPU time-slicing with 1 · sgemm.py" for x in "AB"],
                "Workload 3": [f"h100-colocation-3 {x} · MPS 50 % with 1 · sgemm.py" for x in "AB"],
                "Workload 4": [f"h100-colocation-4 {x} · MIG slice 3g.40gb · sgemm.py" for x in "AB"]}
    open_workload(web, app.url, "Workload 1")
    for workload, labels in expected.items():
        web.locator("#workload label", has_text=workload).first.click()
        web.wait_for_function(f"document.querySelectorAll('#runs .run-row').length === {len(labels)}"
                              f" && document.querySelector('#runs').innerText.includes('{workload[-1]} A')")
        shown = web.evaluate("""() => [...document.querySelectorAll('#runs .run-row')].map(r =>
            r.querySelector('.run-name').innerText.trim() + ' · ' + r.dataset.how)""")
        assert shown == labels, shown
    # Select experiment: every run of every workload listed, in one click
    web.click("#select-experiment")
    web.wait_for_function("document.querySelectorAll('#basket li').length === 7")
    choose(web, "gpu0/power_w")
    wait_traces(web, 7)
    names = [t["name"] for t in trace_info(web)]
    every = [label for labels in expected.values() for label in labels]
    # co-located runs with accounting plot their attributed share, and say so
    assert sorted(n.removesuffix(" (attributed)") for n in names) == sorted(every)
    assert sum(n.endswith("(attributed)") for n in names) == 4
    web.locator("#workload label", has_text="Workload 3").first.click()
    # each click waits for what it shows, as a reader does: a click sent while the previous
    # answer is still on its way carries the selection from before it
    web.wait_for_function("document.querySelector('#runs').innerText.includes('3 A')")
    web.click("#clear")
    web.wait_for_function("document.querySelectorAll('#basket li').length === 0")
    web.click("#select-workload")
    web.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    wait_traces(web, 2)
    snap(web, "frontend-colocated")


def test_colocated_power_is_attributed_by_default_and_the_whole_gpu_on_request(
        web, app, store) -> None:
    select_workload(web, app.url, "Workload 2", 2)
    choose(web, "gpu0/power_w")
    wait_traces(web, 2)
    shown = trace_info(web)
    assert [t["name"] for t in shown] == [
        f"h100-colocation-2 {x} · GPU time-slicing with 1 · sgemm.py (attributed)" for x in "AB"]
    assert [t["y0"] for t in shown] == [300.0, 120.0]
    # units on the axis and in the hover; one hover box for every run; box zoom x only
    layout = web.evaluate(f"() => ({{title: {GD}.layout.yaxis.title.text, "
                          f"hover: {GD}.layout.hovermode, fixed: {GD}.layout.yaxis.fixedrange}})")
    assert layout == {"title": "run's share of GPU power (W)", "hover": "x unified", "fixed": True}
    assert all(t["hover"].endswith(" W") for t in shown)
    web.locator("#power").get_by_text("whole GPU").click()
    web.wait_for_function(f"!{GD}._fullData[0].name.endsWith('(attributed)')")
    whole = trace_info(web)
    assert all(t["y0"] not in (300.0, 120.0) for t in whole)
    assert web.evaluate(f"() => {GD}.layout.yaxis.title.text") == "GPU power (W)"
    # the address bar follows in its own answer, after the chart's
    web.wait_for_function("location.search.includes('power=gpu')")


def test_compare_view_gives_difference_and_ratio_to_a_baseline_from_the_stored_summaries(
        web, app, store, snap) -> None:
    pair = store["runs"]["shared"]
    client = MlflowClient(store["uri"])
    stored = {r.run_id: client.get_run(r.run_id).data.metrics["summary/attribution/gpu0/energy_j"]
              for r in pair}
    assert list(stored.values()) == [36_000.0, 14_400.0]
    select_workload(web, app.url, "Workload 2", 2)
    web.get_by_text("Compare", exact=True).click()
    web.wait_for_selector("#compare-view tbody tr")

    def rows() -> dict[str, list[str]]:
        return {r.get_attribute("data-run"): [c.strip() for c in r.locator("td").all_inner_texts()]
                for r in web.locator("#compare-view tbody tr").all()}

    table = rows()
    a, b = (r.run_id for r in pair)
    assert table[a][1:] == ["36,000", "", "0", "×1.000"] and "(baseline)" in table[a][0]
    assert table[b][1:] == ["14,400", "", "-21,600", "×0.400"]
    assert "energy_j (J)" in web.locator("#compare-view th").all_inner_texts()
    choose(web, "gpu0/power_w")
    wait_traces(web, 2)
    snap(web, "frontend-compare")
    # another baseline: the same numbers seen from B
    web.click("#compare-baseline")
    web.locator("#compare-panel .Select-option, #compare-panel [role=option]",
                has_text="h100-colocation-2 B").first.click()
    web.wait_for_function("document.querySelector('#compare-view tbody tr.baseline')"
                          f".dataset.run === '{b}'")
    table = rows()
    assert table[a][3:] == ["+21,600", "×2.500"] and table[b][3:] == ["0", "×1.000"]


def test_exports_are_files_that_open_with_every_label_and_a_title(web, app, store) -> None:
    select_workload(web, app.url, "Workload 2", 2)
    choose(web, "gpu0/power_w")
    wait_traces(web, 2)
    files = {}
    for fmt in ("png", "jpg", "pdf"):
        with web.expect_download() as download:
            web.click(f"#export-{fmt}")
        files[fmt] = Path(download.value.path()).read_bytes()
        assert download.value.suggested_filename.endswith(f".{fmt}")
        web.wait_for_function("document.querySelector('#export-msg').innerText.includes("
                              f"'exported as {fmt.upper()}')")
    png = files["png"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1200 and height >= 320
    assert files["jpg"].startswith(b"\xff\xd8\xff")
    text = pdf_text(files["pdf"])
    for label in ("seconds since run start", "GPU power (W)", "smi/gpu0/power_w", EXP):
        assert label in text, (label, text[:500])
    title = re.search(rb"/Title\s*(<[0-9A-F]+>|\([^)]*\))", files["pdf"]).group(1)
    decoded = (bytes.fromhex(title[5:-1].decode()).decode("utf-16-be") if title.startswith(b"<")
               else title[1:-1].decode())
    assert decoded.startswith(f"radtrack · {EXP} · 2 runs"), decoded


def test_zoom_is_kept_in_the_link_and_in_a_saved_view(web, chromium, app, store) -> None:
    select_workload(web, app.url, "Workload 2", 2)
    choose(web, "gpu0/power_w")
    wait_traces(web, 2)
    web.evaluate(f"() => Plotly.relayout({GD}, {{'xaxis.range': [20, 50]}})")
    web.wait_for_function("location.search.includes('range=20%2C50')")
    link = web.url
    web.fill("#view-name", "zoomed pair")
    web.click("#save-view")
    web.wait_for_function("document.querySelector('#view-msg').innerText.includes('Saved view')")
    saved = json.loads((app.views_dir / "zoomed pair.json").read_text())
    assert saved["xrange"] == [20.0, 50.0]

    other = chromium.new_page(viewport={"width": 1280, "height": 800})
    other.goto(link)
    wait_traces(other, 2)
    assert other.evaluate(f"() => {GD}.layout.xaxis.range") == [20, 50]
    assert other.evaluate(f"() => {GD}._fullData[0].x[0]") >= 19  # the window's samples
    other.goto(app.url + "?view=zoomed%20pair")
    wait_traces(other, 2)
    other.wait_for_function(f"{GD}.layout.xaxis.range[0] === 20")
    other.close()


def test_overlay_puts_the_same_quantity_of_every_gpu_in_one_subplot(web, app) -> None:
    select_workload(web, app.url, "Workload 4", 2)
    choose(web, "gpu0/power_w")
    choose(web, "gpu1/power_w")
    wait_traces(web, 4)
    assert {t["yaxis"] for t in trace_info(web)} == {"y", "y2"}
    web.locator("#overlay").get_by_text("overlay GPUs").click()
    web.wait_for_function(f"{GD}._fullData.every(t => t.yaxis === 'y')")
    shown = trace_info(web)
    assert [t["name"].rsplit(" · ", 1)[1] for t in shown] == ["gpu0", "gpu0", "gpu1", "gpu1"]
    assert [t["dash"] for t in shown] == ["solid", "solid", "dot", "dot"]
    assert web.evaluate(f"() => {GD}.layout.annotations[0].text") == "smi/gpu*/power_w"
    web.wait_for_function("location.search.includes('overlay=1')")  # the address bar follows


def test_a_running_runs_duration_advances(web, app, store) -> None:
    open_workload(web, app.url, "Workload 1", experiment="live")
    before = web.locator("#runs .duration.live").inner_text()
    web.wait_for_function(f"document.querySelector('#runs .duration.live').innerText !== '{before}'")


def test_every_tab_is_reachable_and_picked_with_the_keyboard(web, app) -> None:
    select_workload(web, app.url, "Workload 2", 2)
    web.locator("#tabs .tab").first.focus()
    for name, panel in (("Correlation", "corr-panel"), ("Energy shares", "shares-panel"),
                        ("Compare", "compare-panel")):
        web.keyboard.press("Tab")
        assert web.evaluate("document.activeElement.innerText.trim()") == name
        web.keyboard.press("Enter")
        web.wait_for_function(f"getComputedStyle(document.getElementById('{panel}')).display "
                              "=== 'block'")
    # the energy shares say each run's total and percentage of the GPU's energy
    web.locator("#tabs .tab", has_text="Energy shares").click()
    web.wait_for_selector(".shares-totals tbody tr")
    rows = [[c.strip() for c in r.locator("td").all_inner_texts()]
            for r in web.locator(".shares-totals tbody tr").all()]
    # the owner's columns (energy_j in J, share_of_device_pct in %), as the report says them
    assert rows[0][1:] == ["h100-colocation-2 A", "36,000", "68.2"]
    assert rows[-1][1:] == ["total", "52,800", "100.0"]


def test_filter_by_user_and_workloads_grouped_by_launch(web, app) -> None:
    web.goto(app.url)
    web.locator("#experiment").get_by_text(EXP, exact=True).click()
    web.wait_for_function("document.querySelectorAll('#workload label').length === 6")
    labels = [t.strip() for t in web.locator("#workload label").all_inner_texts()]
    assert labels[0].startswith("launch bbbb2222 · ") and labels[0].endswith(" · bob")
    assert labels[3].startswith("launch aaaa1111 · ") and labels[3].endswith(" · alice")
    assert [t.split(" · ")[0] for t in labels[1:3] + labels[4:]] == [
        "Workload 4", "Workload 3", "Workload 2", "Workload 1"]
    web.fill("#run-filter", "user=alice")
    web.press("#run-filter", "Enter")
    web.wait_for_function("document.querySelectorAll('#workload label').length === 2")
    assert [t.split(" · ")[0].strip() for t in web.locator("#workload label").all_inner_texts()] == [
        "Workload 2", "Workload 1"]


@pytest.mark.parametrize("width", [1280, 900])
def test_layout_holds_without_horizontal_overflow(chromium, app, width: int, snap) -> None:
    context = chromium.new_context(viewport={"width": width, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    select_workload(tab, app.url, "Workload 3", 2)
    choose(tab, "gpu0/power_w")
    wait_traces(tab, 2)
    tab.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    for selector in ("#basket li", "#runs .status", "#chart", "#summary-panel"):
        box = tab.locator(selector).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, selector
    snap(tab, f"frontend-{width}px")
    context.close()
