"""The page fits its width (issue 42), without a browser: the legend's rows get their own room
above the chart (figures.legend_rows, _fit_legend), the toolbar its own margin, and the
export buttons say what image export needs before a click (layout.export_section).
The browser checks the same at 900 and 1400 px: browser/test_frontend_page_layout.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from radtrack.frontend import figures
from radtrack.frontend.data import Series
from radtrack.frontend.figures import ChartOptions, legend_rows
from radtrack.frontend.image_export import KALEIDO_MISSING, image_export_problem
from radtrack.frontend.layout import build_layout, export_section

METRICS = ["smi/gpu0/power_w"]


def _chart(labels: dict[str, str]) -> dict:
    seconds = np.arange(50.0)
    series = {(r, m): Series(r, m, 1_700_000_000.0, seconds, np.arange(50), seconds)
              for r in labels for m in METRICS}
    return figures.build_chart(METRICS, list(labels), labels, series, ChartOptions())


def test_legend_rows_wrap_whole_entries() -> None:
    assert legend_rows([]) == 1
    assert legend_rows(["a", "b"]) == 1
    long = "x" * 60  # 44 + 60 * 6.8 = 452 px: one a row in 480 px, two in 1000
    assert legend_rows([long] * 4) == 4
    assert legend_rows([long] * 4, width=1000) == 2


def test_more_legend_rows_grow_the_top_margin_and_the_height_not_the_subplots() -> None:
    short = _chart({"r1": "exp-1 A"})["layout"]
    long = _chart({f"r{i}": f"resnet50-batch-sweep-1 {c} · GPU time-slicing with 5 · sgemm.py"
                   for i, c in enumerate("ABCDEF")})["layout"]
    rows = 6
    assert long["margin"]["t"] - short["margin"]["t"] == (rows - 1) * figures.LEGEND_ROW
    assert long["height"] - short["height"] == long["margin"]["t"] - short["margin"]["t"]
    for layout in (short, long):
        plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        # the legend's bottom sits LEGEND_GAP px over the plot, its top inside the margin
        assert layout["legend"]["y"] == pytest.approx(1 + figures.LEGEND_GAP / plot)
        assert layout["legend"]["yanchor"] == "bottom"
        assert layout["modebar"]["orientation"] == "v"
        assert layout["margin"]["r"] >= 36  # the upright toolbar's width


def _buttons(section) -> dict[str, object]:
    return {c.id: c for c in section._traverse() if str(getattr(c, "id", "")).startswith("export-")}


def test_export_buttons_say_what_image_export_needs_before_a_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ready = _buttons(export_section(None))
    assert not any(getattr(b, "disabled", False) for b in ready.values())
    monkeypatch.setitem(sys.modules, "kaleido", None)  # an install without the ui extra
    assert image_export_problem() == KALEIDO_MISSING
    page = build_layout(["exp"], "sqlite:///mlflow.db", [])
    buttons = _buttons(page)
    for fmt in ("png", "jpg", "svg", "pdf"):
        assert buttons[f"export-{fmt}"].disabled and "pip install -e '.[ui]'" in \
            buttons[f"export-{fmt}"].title
    for fmt in ("csv", "json", "view"):
        assert not getattr(buttons[f"export-{fmt}"], "disabled", False)
    needs = [c for c in page._traverse() if getattr(c, "id", None) == "export-needs"]
    assert needs and "needs kaleido" in needs[0].children
