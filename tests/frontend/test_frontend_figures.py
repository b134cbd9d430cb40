"""Figure building: traces per run and metric, colours, legend, axis modes, zoom windows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from radtrack.frontend import figures
from radtrack.frontend.data import Series
from radtrack.frontend.figures import (
    FIGURE_POINT_BUDGET,
    ChartOptions,
    correlation_figure,
    decode_array,
    run_colours,
    run_labels,
    trace_budget,
)

START = 1_700_000_000.0
RUNS = ["run-a", "run-b", "run-c"]
METRICS = ["smi/gpu0/power_w", "top/cpu_pct"]


def _series(run_id: str, metric: str, n: int = 5_000, hz: float = 10.0, offset: float = 0.0
            ) -> Series:
    seconds = np.arange(n) / hz
    value = 100 + 10 * np.sin(seconds) + (hash((run_id, metric)) % 7)
    return Series(run_id, metric, START + offset, seconds, np.arange(n, dtype=np.int64), value)


@pytest.fixture
def series() -> dict[tuple[str, str], Series]:
    data = {(r, m): _series(r, m, offset=i * 30.0) for i, r in enumerate(RUNS) for m in METRICS}
    # run-c never logged cpu: its subplot must simply lack that run
    data[("run-c", "top/cpu_pct")] = Series("run-c", "top/cpu_pct", START, np.empty(0),
                                            np.empty(0, dtype=np.int64), np.empty(0))
    return data


def build_chart(*args, **kwargs) -> go.Figure:
    """The chart dict, validated by plotly (a typo in a property name fails here), with
    its typed arrays decoded so tests can read x and y."""
    spec = figures.build_chart(*args, **kwargs)
    for trace in spec["data"]:
        trace["x"], trace["y"] = decode_array(trace["x"]), decode_array(trace["y"])
    return go.Figure(spec)


def _traces(fig, metric: str) -> list:
    return [t for t in fig.data if t.meta[1] == metric]


def test_one_subplot_per_metric_and_one_trace_per_run(series) -> None:
    fig = build_chart(METRICS, RUNS, {r: r.upper() for r in RUNS}, series, ChartOptions())
    assert [a.text for a in fig.layout.annotations] == METRICS
    assert [t.meta[0] for t in _traces(fig, METRICS[0])] == RUNS
    assert [t.meta[0] for t in _traces(fig, METRICS[1])] == ["run-a", "run-b"]
    # one x axis for every subplot: zooming one subplot zooms them all
    assert {t.xaxis for t in fig.data} == {"x"}
    assert "xaxis2" not in fig.layout and fig.layout.xaxis.anchor == f"y{len(METRICS)}"
    assert {t.yaxis for t in _traces(fig, METRICS[0])} == {"y"}
    assert {t.yaxis for t in _traces(fig, METRICS[1])} == {"y2"}
    assert {fig.layout.yaxis.anchor, fig.layout.yaxis2.anchor} == {"x"}
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]  # first metric on top


def test_layout_has_no_object_valued_template_or_meta(series) -> None:
    """plotly.js compares ``layout.template`` and ``layout.meta`` by identity, and dcc.Graph
    clones the layout on every update: either would make each zoom replot the whole chart."""
    spec = figures.build_chart(METRICS, RUNS, {}, series, ChartOptions())
    assert "template" not in spec["layout"] and "meta" not in spec["layout"]
    # plotly_white's look, written out
    assert spec["layout"]["plot_bgcolor"] == "white"
    assert spec["layout"]["xaxis"]["gridcolor"] == spec["layout"]["yaxis2"]["gridcolor"] == "#EBF0F8"


def test_colour_and_legend_entry_are_per_run_across_subplots(series) -> None:
    fig = build_chart(METRICS, RUNS, {r: f"exp w1 {r[-1].upper()}" for r in RUNS}, series,
                      ChartOptions())
    colours = run_colours(RUNS)
    assert len(set(colours.values())) == len(RUNS)
    for trace in fig.data:
        assert trace.line.color == colours[trace.meta[0]]
        assert trace.legendgroup == trace.meta[0]
    shown = [t.name for t in fig.data if t.showlegend]
    assert shown == ["exp w1 A", "exp w1 B", "exp w1 C"]


def test_seconds_axis_is_aligned_at_each_runs_start(series) -> None:
    fig = build_chart(METRICS[:1], RUNS, {}, series, ChartOptions(xmode="seconds"))
    for trace in fig.data:
        assert np.asarray(trace.x)[0] == 0.0
    assert fig.layout.xaxis.title.text == "seconds since run start"


def test_wall_clock_axis_shows_the_runs_offsets_on_a_date_axis(series) -> None:
    fig = build_chart(METRICS[:1], RUNS, {}, series, ChartOptions(xmode="wall"))
    assert fig.layout.xaxis.type == "date"
    firsts = [np.asarray(t.x)[0] for t in fig.data]
    # milliseconds since the epoch; the runs started 30 s apart
    assert firsts == [START * 1000, (START + 30) * 1000, (START + 60) * 1000]


def test_whole_runs_are_an_explicit_x_range(series) -> None:
    """Unzoomed, the x range is the runs' extent (not autorange), so the first zoom is a
    range change like every other; in wall-clock mode in the date axis' milliseconds."""
    fig = build_chart(METRICS, RUNS, {}, series, ChartOptions(xmode="wall"))
    last = (START + 60 + 4_999 / 10.0) * 1000
    assert list(fig.layout.xaxis.range) == pytest.approx([START * 1000, last])
    fig = build_chart(METRICS, RUNS, {}, series, ChartOptions(xmode="seconds"))
    assert list(fig.layout.xaxis.range) == pytest.approx([0.0, 499.9])


def test_step_axis_and_log_y(series) -> None:
    fig = build_chart(METRICS[:1], RUNS[:1], {}, series, ChartOptions(xmode="step", logy=True))
    assert np.asarray(fig.data[0].x)[-1] == 4_999
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text == "step"


def test_axis_types_are_given_not_guessed(series) -> None:
    """plotly.js would guess each axis' type from the data again on every zoom's restyle."""
    fig = build_chart(METRICS, RUNS, {}, series, ChartOptions(xmode="seconds"))
    assert fig["layout"]["xaxis"]["type"] == "linear"
    assert [fig["layout"][k]["type"] for k in ("yaxis", "yaxis2")] == ["linear", "linear"]
    fig = build_chart(METRICS, RUNS, {}, series, ChartOptions(xmode="wall", logy=True))
    assert fig["layout"]["xaxis"]["type"] == "date"
    assert [fig["layout"][k]["type"] for k in ("yaxis", "yaxis2")] == ["log", "log"]


def test_zoom_window_is_resampled_at_full_resolution(series) -> None:
    full = build_chart(METRICS[:1], RUNS[:1], {}, series, ChartOptions(max_trace_budget=500))
    assert len(full.data[0].x) <= 500
    zoomed = build_chart(METRICS[:1], RUNS[:1], {}, series,
                         ChartOptions(x_range=(100.0, 120.0), max_trace_budget=500))
    x = np.asarray(zoomed.data[0].x)
    # 20 s at 10 Hz: all 201 samples fit the budget, plus one neighbour on each side
    assert len(x) == 203
    assert x[0] == pytest.approx(99.9) and x[-1] == pytest.approx(120.1)
    assert list(zoomed.layout.xaxis.range) == [100.0, 120.0]


def test_smoothing_flattens_the_trace(series) -> None:
    raw = build_chart(METRICS[:1], RUNS[:1], {}, series, ChartOptions())
    smooth = build_chart(METRICS[:1], RUNS[:1], {}, series, ChartOptions(smooth=63))
    assert np.ptp(np.asarray(smooth.data[0].y)[100:]) < np.ptp(np.asarray(raw.data[0].y)[100:]) / 5


def test_figure_point_budget_is_shared_between_traces() -> None:
    assert trace_budget(1) == 1500
    assert trace_budget(40) == FIGURE_POINT_BUDGET // 40
    assert trace_budget(50) * 50 <= FIGURE_POINT_BUDGET
    assert trace_budget(1000) == figures.MIN_TRACE_BUDGET  # never fewer points than that
    assert trace_budget(10_000) == 200


def test_empty_selection_gives_a_hint() -> None:
    fig = build_chart([], RUNS, {}, {}, ChartOptions())
    assert not fig.data and "Pick runs" in fig.layout.annotations[0].text


def test_run_labels_are_the_mlflow_run_names_disambiguated() -> None:
    runs = pd.DataFrame([
        {"run_id": "aaaaaa1", "run_name": "exp-1 A", "experiment": "exp", "workload": 1, "letter": "A"},
        {"run_id": "bbbbbb2", "run_name": "exp-1 A", "experiment": "exp", "workload": 1, "letter": "A"},
        {"run_id": "cccccc3", "run_name": "plain", "experiment": "exp", "workload": None,
         "letter": None},
        # a row run the script renamed (HF's Trainer): its new name, as MLflow shows it
        {"run_id": "dddddd4", "run_name": "hf-tiny", "experiment": "exp", "workload": 2, "letter": "A"},
        {"run_id": "eeeeee5", "run_name": None, "experiment": "exp", "workload": None, "letter": None},
    ])
    labels = run_labels(runs)
    assert labels == {"aaaaaa1": "exp-1 A (aaaaaa)", "bbbbbb2": "exp-1 A (bbbbbb)",
                      "cccccc3": "plain", "dddddd4": "hf-tiny", "eeeeee5": "eeeeee5"}


def test_a_runs_colour_does_not_depend_on_tick_order_or_the_other_runs() -> None:
    ids = [f"{i:032x}" for i in range(1, 9)]
    alone = {r: run_colours([r])[r] for r in ids}
    forward, backward = run_colours(ids), run_colours(list(reversed(ids)))
    assert len(set(forward.values())) == len(ids) == len(set(backward.values()))
    # a run keeps its own colour unless an earlier run of the selection holds it
    kept = [r for r in ids if forward[r] == alone[r] == backward[r]]
    assert len(kept) >= len(ids) // 2, (alone, forward, backward)


def test_correlation_heatmap_is_symmetric_and_bounded() -> None:
    matrix = pd.DataFrame([[1.0, -0.5], [-0.5, 1.0]], index=METRICS, columns=METRICS)
    fig = correlation_figure(matrix, "t")
    assert fig.data[0].zmin == -1 and fig.data[0].zmax == 1
    assert list(fig.data[0].x) == METRICS


def test_zoom_payload_carries_the_figures_arrays_in_trace_order(series) -> None:
    """The binary zoom answer (zoom_data.encode) holds exactly the arrays build_chart puts
    in the figure for the same window, named and ordered as the figure's traces."""
    from radtrack.frontend.zoom_data import decode, encode

    for options in (ChartOptions(x_range=(100.0, 120.0), max_trace_budget=500),
                    ChartOptions(xmode="wall", max_trace_budget=500)):
        spec = figures.build_chart(METRICS, RUNS, {}, series, options)
        arrays = figures.chart_arrays(METRICS, RUNS, series, options)
        header, decoded = decode(encode(arrays, "rev1"))
        assert header["rev"] == "rev1"
        assert [meta for meta, _ in header["traces"]] == [t["meta"] for t in spec["data"]]
        assert len(decoded) == len(spec["data"]) == 5  # run-c has no cpu series
        for (x, y), trace in zip(decoded, spec["data"], strict=True):
            assert x.dtype == np.float64 and y.dtype == np.float32
            np.testing.assert_array_equal(x, decode_array(trace["x"]))
            np.testing.assert_array_equal(y, decode_array(trace["y"]))
