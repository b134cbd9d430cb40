"""The page's shell and light-weight parts in a real headless Chromium: which scripts a page
loads, which callbacks it starts with, the Summary table's sorting, the run popover and
the correlation heatmap (radtrack/frontend/page_shell.py, assets/summary_table.js, assets/run_info.js)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from plotly.offline import get_plotlyjs_version
from synthetic import new_store, seed_workload

pytestmark = pytest.mark.browser

METRICS = ("smi/gpu0/power_w", "dcgm/gpu0/sm_active_pct", "top/cpu_pct")
GD = "document.querySelector('#chart .js-plotly-plot')"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("page-store")
    uri = new_store(root)
    # Two workloads of different lengths: their summaries differ in every duration column.
    first = seed_workload(uri, "page", 1, ["A", "B"], metrics=METRICS, points=600, hz=10.0,
                          history=False, artifact_root=root / "artifacts")
    second = seed_workload(uri, "page", 2, ["A"], metrics=METRICS, points=1200, hz=10.0,
                           history=False, start=1_700_050_000.0,
                           artifact_root=root / "artifacts")
    return {"uri": uri, "root": root, "runs": [*first, *second]}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


def pick(tab, url: str, workload: str, runs: list[str]) -> None:
    tab.goto(url)
    tab.locator("#experiment").get_by_text("page", exact=True).click()
    tab.locator("#workload label", has_text=workload).first.click()
    for name in runs:
        tab.locator("#runs .run-name").get_by_text(name, exact=True).click()


def drawn(traces: int) -> str:
    """The chart shows ``traces`` traces."""
    return f"{GD} && {GD}._fullData && {GD}._fullData.length === {traces}"


def new_tab(chromium):
    """A tab of its own browser context (nothing cached or shared with ``web``)."""
    tab = chromium.new_page(viewport={"width": 1500, "height": 1000})
    tab.set_default_timeout(20_000)
    return tab


def chart_link(tab, url: str, workload: str, runs: list[str], metrics: list[str]) -> str:
    """``runs`` picked and ``metrics`` (their names in the list) ticked: the page's URL
    once the chart shows them and the URL names the last metric."""
    pick(tab, url, workload, runs)
    for short in metrics:
        tab.locator("#metrics").get_by_text(short, exact=True).click()
    tab.wait_for_function(drawn(len(runs) * len(metrics)))
    tab.wait_for_function(f"location.search.includes({json.dumps(quote(metrics[-1], safe=''))})")
    return tab.url


def callback_outputs(tab) -> list[str]:
    """The outputs of every callback request the tab sends, in order."""
    sent: list[str] = []
    tab.on("request", lambda r: sent.append(json.loads(r.post_data or "{}").get("output", ""))
           if "_dash-update-component" in r.url else None)
    return sent


def test_page_loads_the_two_trace_plotly_bundle_once_and_no_polyfill(web, app) -> None:
    urls: list[str] = []
    web.on("request", lambda r: urls.append(r.url))
    pick(web, app.url, "Workload 1", ["page-1 A"])
    web.locator("#metrics").get_by_text("gpu0/power_w", exact=True).click()
    web.wait_for_function(drawn(1))
    version = get_plotlyjs_version()
    plotly = [u for u in urls if "plotly" in u.rsplit("/", 1)[-1]]
    assert len(plotly) == 1 and plotly[0].endswith(f"/vendor/plotly-radtrack-{version}.min.js")
    assert not [u for u in urls if "polyfill" in u]
    # The layout and the callbacks came with the page.
    assert not [u for u in urls if "_dash-layout" in u or "_dash-dependencies" in u]
    assert web.evaluate("Plotly.version") == version
    traces = web.evaluate("Object.keys(Plotly.PlotSchema.get().traces).sort()")
    assert traces == ["heatmap", "scatter"]


def test_a_page_and_a_shared_link_start_with_no_callback_request(web, chromium, app) -> None:
    sent = callback_outputs(web)
    web.goto(app.url)
    # The summary's (empty) answer drawn from the layout, then nothing more to come.
    web.wait_for_function("document.querySelector('#summary') && "
                          "document.querySelector('#summary').getAttribute('data-rows') === '0'")
    web.wait_for_load_state("networkidle")
    # Every answer a page starts with is in its layout already.
    assert sent == [], sent
    link = chart_link(web, app.url, "Workload 1", ["page-1 A", "page-1 B"], ["gpu0/power_w"])

    tab = new_tab(chromium)
    sent = callback_outputs(tab)
    tab.goto(link)
    tab.wait_for_function(drawn(2))
    tab.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
    tab.wait_for_load_state("networkidle")
    # The link's chart, summary, basket and run list came in its layout.
    assert sent == [], sent
    assert tab.locator("#basket li").count() == 2
    assert tab.locator("#runs .run-row").count() == 2
    tab.close()


def test_summary_table_sorts_by_a_clicked_header_and_keeps_the_order(web, app) -> None:
    pick(web, app.url, "Workload 1", ["page-1 A", "page-1 B"])
    web.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
    web.locator("#workload label", has_text="Workload 2").first.click()
    web.locator("#runs .run-name").get_by_text("page-2 A", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 3")
    column = web.evaluate("""() => {
        const heads = [...document.querySelectorAll('#summary th.numeric')];
        const i = heads.findIndex(h => h.innerText.trim() === 'duration_s (s)');
        return i < 0 ? null : heads[i].cellIndex; }""")
    assert column is not None, web.locator("#summary th").all_inner_texts()

    def values() -> list[float]:
        return [float(v) for v in web.evaluate(
            f"() => [...document.querySelectorAll('#summary tbody tr')]"
            f".map(r => r.cells[{column}].innerText)")]

    header = web.locator("#summary th", has_text="duration_s")
    header.click()
    assert values() == sorted(values()) and len(set(values())) == 2
    assert header.get_attribute("aria-sort") == "ascending"
    web.locator("#summary th", has_text="duration_s").click()
    assert values() == sorted(values(), reverse=True)
    # A new row keeps the order: untick one run, the table is redrawn still descending.
    web.locator("#runs .run-name").get_by_text("page-2 A", exact=True).click()
    web.wait_for_function("document.querySelectorAll('#summary tbody tr').length === 2")
    assert web.locator("#summary th", has_text="duration_s").get_attribute("aria-sort") == "descending"


def test_run_popover_lists_the_runs_id_and_tags_on_hover_and_focus(web, app, store) -> None:
    pick(web, app.url, "Workload 1", [])
    run = next(r for r in store["runs"] if r.run_name == "page-1 B")
    info = web.locator(".run-row", has_text="page-1 B").locator(".info")
    info.hover()
    popover = web.locator("#run-popover")
    popover.wait_for(state="visible")
    text = popover.inner_text()
    assert "run id" in text and run.run_id in text and "tag.radtrack." in text
    web.mouse.move(5, 5)
    popover.wait_for(state="hidden")
    info.focus()
    popover.wait_for(state="visible")


def test_correlation_heatmap_is_drawn_by_the_bundle(web, app) -> None:
    pick(web, app.url, "Workload 1", ["page-1 A"])
    for short in ("gpu0/power_w", "gpu0/sm_active_pct"):
        web.locator("#metrics").get_by_text(short, exact=True).click()
    web.locator("#tabs").get_by_text("Correlation", exact=True).click()
    corr = "document.querySelector('#corr .js-plotly-plot')"
    web.wait_for_function(f"{corr} && {corr}._fullData.length === 1 && "
                          f"{corr}._fullData[0].type === 'heatmap'")
    assert web.locator("#corr .heatmaplayer image, #corr .hm image").count() >= 1


# Counts the plotly.js draws of each chart (by the id of the box it sits in).
COUNT_DRAWS = """(() => {
    window.radtrackDraws = {};
    let real;
    Object.defineProperty(window, 'Plotly', {configurable: true, get: () => real, set: (p) => {
        real = p;
        for (const name of ['react', 'newPlot']) {
            const f = p[name];
            p[name] = function (gd, ...rest) {
                const id = gd.parentElement ? gd.parentElement.id : '?';
                window.radtrackDraws[id] = (window.radtrackDraws[id] || 0) + 1;
                return f.call(this, gd, ...rest);
            };
        }
    }});
})();"""


def test_a_shared_link_draws_its_chart_once_and_hidden_charts_only_when_shown(web, chromium, app) -> None:
    link = chart_link(web, app.url, "Workload 1", ["page-1 A", "page-1 B"],
                      ["gpu0/power_w", "gpu0/sm_active_pct"])

    tab = new_tab(chromium)
    tab.add_init_script(COUNT_DRAWS)
    tab.goto(link)
    tab.wait_for_function(drawn(4))
    tab.wait_for_load_state("networkidle")
    tab.wait_for_timeout(300)
    # One draw of the link's chart, with the arrays decoded once (typed arrays); the
    # correlation and shares charts, in hidden panels, not drawn yet.
    assert tab.evaluate("window.radtrackDraws") == {"chart": 1}
    assert tab.evaluate(f"{GD}.data.every(t => t.x instanceof Float64Array)")
    assert tab.evaluate(f"{GD}.radtrackQuery.runs.length") == 2
    # The chart's height is the figure's (320 px per metric and the margins), on its box.
    box = tab.evaluate("document.querySelector('#chart').getBoundingClientRect().height")
    assert box == pytest.approx(tab.evaluate(f"{GD}._fullLayout.height"), abs=2)
    # Shown: drawn (its placeholder, then the workload's shares); the other still not.
    tab.locator("#tabs").get_by_text("Energy shares", exact=True).click()
    tab.wait_for_function("document.querySelector('#shares .js-plotly-plot')")
    assert tab.evaluate("window.radtrackDraws.shares") in (1, 2)
    assert "corr" not in tab.evaluate("window.radtrackDraws")
    tab.close()


def test_the_chart_follows_its_box_when_the_window_narrows(web, app) -> None:
    chart_link(web, app.url, "Workload 1", ["page-1 A"], ["gpu0/power_w"])
    wide = web.evaluate(f"{GD}._fullLayout.width")
    web.set_viewport_size({"width": 1250, "height": 1000})  # three columns still
    web.wait_for_function(f"{GD}._fullLayout.width < {wide} - 100")
    box = web.evaluate("document.querySelector('#chart').clientWidth")
    assert web.evaluate(f"{GD}._fullLayout.width") == pytest.approx(box, abs=4)


def test_a_link_naming_a_saved_view_loads_it_and_back_and_forward_work(web, chromium, app) -> None:
    chart_link(web, app.url, "Workload 2", ["page-2 A"], ["gpu0/power_w"])
    web.fill("#view-name", "one run")
    web.click("#save-view")
    web.wait_for_function("document.querySelector('#view-msg').innerText.includes('Saved view')")

    tab = new_tab(chromium)
    # Not restored in the layout (a name, not a state): the page asks apply_view once.
    tab.goto(app.url + "?view=one+run")
    tab.wait_for_function("document.querySelector('#view-msg').innerText.includes('Loaded view')")
    tab.wait_for_function(drawn(1))
    assert tab.locator("#basket li").count() == 1
    tab.close()

    # A link restored in its layout, then another state, then back: the first comes back.
    first = chart_link(web, app.url, "Workload 1", ["page-1 A", "page-1 B"], ["gpu0/power_w"])
    tab = new_tab(chromium)
    tab.goto(first)
    tab.wait_for_function(drawn(2))
    tab.locator("#basket li button").first.click()
    tab.wait_for_function(f"{GD}._fullData.length === 1")
    tab.wait_for_function(f"location.href !== {json.dumps(first)}")
    tab.go_back()
    tab.wait_for_function(f"location.href === {json.dumps(first)}")
    tab.wait_for_function(f"{GD}._fullData.length === 2")
    tab.wait_for_function("document.querySelectorAll('#basket li').length === 2")
    tab.go_forward()
    tab.wait_for_function(f"{GD}._fullData.length === 1")
    tab.close()
