"""Exports: series as CSV/JSON (run, metric, time, value), the view as JSON, chart images."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from radtrack.frontend import exports
from radtrack.frontend.data import Series

START = 1_700_000_000.0


def _series() -> dict[tuple[str, str], Series]:
    seconds = np.arange(100, dtype=np.float64)
    return {
        ("r1", "m"): Series("r1", "m", START, seconds, np.arange(100), seconds * 2),
        ("r2", "m"): Series("r2", "m", START + 10, seconds, np.arange(100), seconds * 3),
    }


def test_series_frame_has_the_contract_columns_and_wall_clock_time() -> None:
    frame = exports.series_frame(_series(), ["r1", "r2"], ["m"])
    assert list(frame.columns) == ["run", "metric", "time", "value"]
    assert len(frame) == 200
    assert frame["time"].iloc[0] == START and frame["time"].iloc[100] == START + 10


def test_series_frame_keeps_only_the_zoomed_window() -> None:
    frame = exports.series_frame(_series(), ["r1", "r2"], ["m"], "seconds", (10.0, 19.0))
    assert frame.groupby("run").size().to_dict() == {"r1": 10, "r2": 10}
    wall = exports.series_frame(_series(), ["r1", "r2"], ["m"], "wall", (START + 5, START + 14))
    assert wall.groupby("run").size().to_dict() == {"r1": 10, "r2": 5}


def test_csv_and_json_parse_back_to_the_same_samples() -> None:
    frame = exports.series_frame(_series(), ["r1"], ["m"])
    back = pd.read_csv(io.StringIO(exports.series_csv(frame)))
    assert list(back.columns) == ["run", "metric", "time", "value"]
    np.testing.assert_allclose(back["value"], frame["value"])
    records = json.loads(exports.series_json(frame))
    assert records[3] == {"run": "r1", "metric": "m", "time": START + 3, "value": 6.0}


def test_empty_selection_exports_an_empty_table_with_headers() -> None:
    frame = exports.series_frame({}, ["r1"], ["m"])
    assert exports.series_csv(frame).strip() == "run,metric,time,value"


def test_view_json_names_the_store_the_view_and_the_runs() -> None:
    runs = pd.DataFrame([{"run_id": "r1", "run_name": "exp-1 A", "experiment": "exp",
                          "workload": pd.NA, "letter": "A", "status": "FINISHED"}])
    text = exports.view_json({"runs": ["r1"], "metrics": ["m"]}, runs, "sqlite:///x.db")
    data = json.loads(text)
    assert data["tracking_uri"] == "sqlite:///x.db"
    assert data["view"]["metrics"] == ["m"]
    assert data["runs"][0]["run_name"] == "exp-1 A" and data["runs"][0]["workload"] is None


def test_unknown_image_format_is_refused_before_starting_a_browser() -> None:
    with pytest.raises(ValueError, match="image format 'jpg' is not one of png, svg, pdf"):
        exports.figure_image(go.Figure(), "jpg")


@pytest.mark.skipif(not os.path.exists(exports.CHROMIUM), reason=f"{exports.CHROMIUM} missing")
def test_chart_images_are_rendered_by_headless_chromium() -> None:
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[3, 1, 2]))
    fig.update_layout(height=300)
    assert exports.figure_image(fig, "png").startswith(b"\x89PNG\r\n\x1a\n")
    assert b"<svg" in exports.figure_image(fig, "svg")[:200]
    assert exports.figure_image(fig, "pdf").startswith(b"%PDF")
