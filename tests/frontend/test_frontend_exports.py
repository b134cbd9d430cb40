"""Exports: series as CSV/JSON (run by display name and id, metric, ISO time, seconds, value),
the view as JSON, chart images (PNG/JPG/SVG/PDF with their labels and a document title)."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radtrack.frontend import exports, image_export
from radtrack.frontend.data import Series

sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
from pdf_text import pdf_text  # noqa: E402 (tests/frontend/browser/pdf_text.py)

START = 1_700_000_000.0


def _series(metric: str = "m") -> dict[tuple[str, str], Series]:
    seconds = np.arange(100, dtype=np.float64)
    return {
        ("r1", metric): Series("r1", metric, START, seconds, np.arange(100), seconds * 2),
        ("r2", metric): Series("r2", metric, START + 10, seconds, np.arange(100), seconds * 3),
    }


def test_series_frame_names_runs_and_gives_time_as_iso_and_seconds() -> None:
    frame = exports.series_frame(_series(), ["r1", "r2"], ["m"], names={"r1": "exp-1 A"})
    assert list(frame.columns) == ["run", "run_id", "node", "metric", "label", "scope", "unit",
                                   "time", "seconds", "unix_time", "value"]
    assert len(frame) == 200
    assert frame["run"].iloc[0] == "exp-1 A" and frame["run"].iloc[100] == "r2"  # no name: id
    assert frame["time"].iloc[0] == "2023-11-14T22:13:20.000Z"
    assert frame["time"].iloc[101] == "2023-11-14T22:13:31.000Z"  # r2 starts 10 s later
    assert frame["seconds"].iloc[101] == 1.0 and frame["unix_time"].iloc[0] == START


def test_series_frame_keeps_only_the_zoomed_window() -> None:
    frame = exports.series_frame(_series(), ["r1", "r2"], ["m"], "seconds", (10.0, 19.0))
    assert frame.groupby("run").size().to_dict() == {"r1": 10, "r2": 10}
    wall = exports.series_frame(_series(), ["r1", "r2"], ["m"], "wall", (START + 5, START + 14))
    assert wall.groupby("run").size().to_dict() == {"r1": 10, "r2": 5}


def test_csv_and_json_parse_back_to_the_same_samples() -> None:
    frame = exports.series_frame(_series(), ["r1"], ["m"])
    back = pd.read_csv(io.StringIO(exports.series_csv(frame)))
    assert list(back.columns) == exports.SERIES_COLUMNS
    np.testing.assert_allclose(back["value"], frame["value"])
    records = json.loads(exports.series_json(frame))
    assert records[3] == {"run": "r1", "run_id": "r1", "node": 0, "metric": "m", "label": "m",
                          "scope": "run", "unit": "",  # the script's own: no unit
                          "time": "2023-11-14T22:13:23.000Z", "seconds": 3.0,
                          "unix_time": START + 3, "value": 6.0}


def test_empty_selection_exports_an_empty_table_with_headers() -> None:
    frame = exports.series_frame({}, ["r1"], ["m"])
    assert exports.series_csv(frame).strip() == (
        "run,run_id,node,metric,label,scope,unit,time,seconds,unix_time,value")


def test_each_sample_says_whose_figure_and_its_unit() -> None:
    host = exports.series_frame(_series("top/cpu_pct"), ["r1"], ["top/cpu_pct"])
    run = exports.series_frame(_series("top/proc/cpu_pct"), ["r1"], ["top/proc/cpu_pct"])
    assert set(host["label"]) == {"host CPU (% of all cores)"} and set(host["scope"]) == {"host"}
    assert set(run["label"]) == {"run CPU (% of one core)"} and set(run["scope"]) == {"run"}
    assert set(run["unit"]) == {"% of one core"}
    back = pd.read_csv(io.StringIO(exports.series_csv(run)))
    assert back["label"].iloc[0] == "run CPU (% of one core)"


def test_view_json_names_the_store_the_view_and_the_runs() -> None:
    runs = pd.DataFrame([{"run_id": "r1", "run_name": "exp-1 A", "experiment": "exp",
                          "workload": pd.NA, "letter": "A", "status": "FINISHED"}])
    text = exports.view_json({"runs": ["r1"], "metrics": ["m"]}, runs, "sqlite:///x.db")
    data = json.loads(text)
    assert data["tracking_uri"] == "sqlite:///x.db"
    assert data["view"]["metrics"] == ["m"]
    assert data["runs"][0]["run_name"] == "exp-1 A" and data["runs"][0]["workload"] is None


def test_unknown_image_format_is_refused_before_starting_a_browser() -> None:
    with pytest.raises(exports.ExportError, match="image format 'gif' is not one of png, jpg, svg, pdf"):
        exports.render({"data": [], "layout": {}}, "gif", "t")


def test_export_without_kaleido_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kaleido", None)  # an environment without the ui extra
    with pytest.raises(exports.ExportError, match=r"needs kaleido: pip install -e '\.\[ui\]'"):
        exports.render({"data": [], "layout": {}}, "png", "t")


def test_pdf_title_is_replaced_and_the_cross_references_still_point_at_their_objects() -> None:
    body = b"%PDF-1.4\n1 0 obj\n<</Title (Kaleido-fier)>>\nendobj\n2 0 obj\n<<>>\nendobj\n"
    second = body.index(b"2 0 obj")
    pdf = (body + b"xref\n0 3\n0000000000 65535 f \n0000000009 00000 n \n%010d 00000 n \n"
           % second + b"trailer\n<</Size 3 /Info 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % len(body))
    titled = image_export.pdf_titled(pdf, "exp (a) · b")
    assert b"Kaleido-fier" not in titled and b"/Title <FEFF" in titled
    table = titled[titled.index(b"xref"):].split(b"\n")
    assert titled[int(table[4][:10]):].startswith(b"2 0 obj")
    start = int(titled.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    assert titled[start:].startswith(b"xref")
    assert image_export.pdf_titled(b"%PDF-1.4 no info", "t") == b"%PDF-1.4 no info"


def test_export_figure_has_the_title_and_margins_that_fit_its_labels() -> None:
    page = {"data": [], "layout": {"margin": {"t": 40, "b": 50}, "radtrack": 1,
                                   "xaxis": {"automargin": False, "ticklabeloverflow": "allow"},
                                   "yaxis2": {"automargin": False}}, "radtrack": {"runs": []}}
    fig = image_export.export_figure(page, "radtrack · exp")
    assert fig["layout"]["title"]["text"] == "radtrack · exp" and "radtrack" not in fig
    assert fig["layout"]["xaxis"] == {"automargin": True}
    assert fig["layout"]["yaxis2"]["automargin"] is True and fig["layout"]["margin"]["t"] == 80
    assert page["layout"]["xaxis"]["automargin"] is False  # the page's figure is left alone


@pytest.mark.skipif(not os.path.exists(exports.CHROMIUM), reason=f"{exports.CHROMIUM} missing")
def test_chart_images_are_rendered_by_headless_chromium_with_their_labels() -> None:
    fig = {"data": [{"type": "scatter", "x": [0, 1, 2], "y": [3, 1, 2], "name": "exp-1 A"}],
           "layout": {"height": 300, "xaxis": {"title": {"text": "seconds since run start"}},
                      "yaxis": {"title": {"text": "power (W)"}}}}
    assert exports.render(fig, "png", "t").startswith(b"\x89PNG\r\n\x1a\n")
    assert exports.render(fig, "jpg", "t").startswith(b"\xff\xd8\xff")
    assert b"<svg" in exports.render(fig, "svg", "t")[:200]
    pdf = exports.render(fig, "pdf", "radtrack exp")
    assert pdf.startswith(b"%PDF") and b"/Title (radtrack exp)" in pdf
    text = pdf_text(pdf)
    assert "seconds since run start" in text and "power (W)" in text and "radtrack exp" in text
