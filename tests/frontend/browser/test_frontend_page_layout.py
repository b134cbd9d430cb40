"""The page at 900, 1400 and 1920 px (issue 42): the legend clear of the chart's toolbar, no
label or placeholder cut off, the chart and the summary given the width (radtrack/frontend/layout.py,
figures.py, assets/style.css); image export says what it needs on its buttons, before a
click, where it cannot run (image_export.py)."""

from __future__ import annotations

import sys

import pytest
from synthetic import new_store, seed_workload

pytestmark = pytest.mark.browser

# a run label of 61 characters (name · co-location · script): wrapped in the basket, six
# entries of the legend over several rows
EXPERIMENT = "resnet50-batch-sweep"
LETTERS = ["A", "B", "C", "D", "E", "F"]
METRICS = ("smi/gpu0/power_w", "top/cpu_pct")
GD = "document.querySelector('#chart .js-plotly-plot')"
#: the least share of the viewport's width the chart and the summary get
WIDTH_SHARE = {900: 0.6, 1400: 0.7, 1920: 0.65}

OVERLAP = """([a, b]) => {
    const p = document.querySelector(a).getBoundingClientRect();
    const q = document.querySelector(b).getBoundingClientRect();
    return p.width > 0 && q.width > 0 && p.left < q.right && q.left < p.right
        && p.top < q.bottom && q.top < p.bottom;
}"""

# Each element whose text is wider than its box (scrollWidth > clientWidth), or that ends
# past the Selection's box.
CUT = """(selector) => {
    const box = document.querySelector('.basket-column').getBoundingClientRect();
    return [...document.querySelectorAll(selector)].filter(e =>
        e.scrollWidth > e.clientWidth || e.getBoundingClientRect().right > box.right + 0.5
    ).map(e => e.innerText);
}"""

# The filter's placeholder: its text's width in the input's font against the room inside.
PLACEHOLDER = """() => {
    const input = document.getElementById('run-filter'), style = getComputedStyle(input);
    const context = document.createElement('canvas').getContext('2d');
    context.font = style.font;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return [context.measureText(input.placeholder).width, room];
}"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("page-layout")
    uri = new_store(root)
    runs = seed_workload(uri, EXPERIMENT, 1, LETTERS, metrics=METRICS, points=120, hz=1.0,
                         history=False, artifact_root=root / "artifacts")
    return {"uri": uri, "root": root, "runs": runs}


@pytest.fixture(scope="module")
def app(serve, store):
    return serve(store["uri"], store["root"] / "views")


@pytest.mark.parametrize("width", [900, 1400, 1920])
def test_nothing_cut_or_overlapping_and_the_chart_gets_the_width(chromium, app, store, snap,
                                                                  width: int) -> None:
    context = chromium.new_context(viewport={"width": width, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    try:
        tab.goto(app.url)
        tab.locator("#experiment").get_by_text(EXPERIMENT, exact=True).click()
        tab.locator("#workload label", has_text="Workload 1").first.click()
        for run in store["runs"]:
            tab.locator("#runs .run-name").get_by_text(run.run_name, exact=True).click()
        tab.wait_for_function(f"document.querySelectorAll('#basket li').length === {len(LETTERS)}")
        for key in METRICS:
            tab.locator("#metrics").get_by_text(key.split("/", 1)[1], exact=True).click()
        tab.wait_for_function(f"{GD} && {GD}._fullData && {GD}._fullData.length === "
                              f"{len(LETTERS) * len(METRICS)}")
        tab.wait_for_function("document.querySelectorAll('#summary tbody tr').length > 0")
        tab.hover("#chart .js-plotly-plot")  # the toolbar shows on hover
        snap(tab, f"page-layout-{width}")

        # the legend (six long labels, wrapped over rows) and the toolbar are both drawn, apart
        legend = tab.evaluate("document.querySelector('#chart g.legend').getBoundingClientRect()"
                              ".toJSON()")
        assert legend["width"] > width * 0.3, legend
        assert not tab.evaluate(OVERLAP, ["#chart g.legend", "#chart .modebar"])
        # nor over the first subplot's title or plot
        assert not tab.evaluate(OVERLAP, ["#chart g.legend", "#chart g.annotation"])
        title = tab.evaluate("document.querySelector('#chart g.annotation')"
                             ".getBoundingClientRect().toJSON()")
        assert legend["bottom"] <= title["top"] + 1, (legend, title)  # above it, not around it

        # the Selection's labels wrap inside the basket; nothing in the picker is cut either
        assert not tab.evaluate(CUT, "#basket li, #basket h3, .basket-column h2"), width
        cut = tab.evaluate("""[...document.querySelectorAll('#experiment label, #workload label,'
            + ' #runs .run-name label')].filter(e => e.scrollWidth > e.clientWidth)
            .map(e => e.innerText)""")
        assert not cut, cut
        label = tab.evaluate("document.querySelector('#basket li').innerText")
        assert EXPERIMENT in label and "GPU time-slicing" in label
        text, room = tab.evaluate(PLACEHOLDER)
        assert 0 < text <= room, (text, room)

        # the chart and the summary have the width: the basket is a third column only from 1600 px
        for selector in ("#chart", "#summary-panel"):
            got = tab.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().width")
            assert got >= WIDTH_SHARE[width] * width, (selector, got)
        assert tab.evaluate("document.documentElement.scrollWidth") <= width  # no page scroll
    finally:
        context.close()


def test_image_export_says_what_it_needs_before_the_click(chromium, app,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tab = chromium.new_page(viewport={"width": 1400, "height": 900})
    tab.set_default_timeout(30_000)
    try:
        # this machine exports (kaleido, /usr/bin/chromium): the image buttons work
        tab.goto(app.url)
        assert tab.locator("#export-png").is_enabled()
        assert tab.locator("#export-needs").count() == 0
        # an install without the ui extra: the page, not a click, says so
        monkeypatch.setitem(sys.modules, "kaleido", None)
        tab.goto(app.url)
        for fmt in ("png", "jpg", "svg", "pdf"):
            button = tab.locator(f"#export-{fmt}")
            assert button.is_disabled(), fmt
            assert "pip install -e '.[ui]'" in (button.get_attribute("title") or "")
        assert tab.locator("#export-csv").is_enabled() and tab.locator("#export-json").is_enabled()
        needs = tab.locator("#export-needs").inner_text()
        assert "needs kaleido" in needs and "pip install -e '.[ui]'" in needs, needs
    finally:
        tab.close()
