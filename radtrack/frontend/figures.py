"""Plotly figures: one subplot per metric, one trace per run, the same colour per run everywhere."""

from __future__ import annotations

import base64
import copy
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.io as pio

from radtrack.analysis.plotting import (  # noqa: F401 (correlation_figure: re-export)
    correlation_figure,
    empty_figure,
)
from radtrack.compute.gpulabel import physical_gpus_of_row
from radtrack.frontend.colocation import description
from radtrack.frontend.data import Series
from radtrack.frontend.downsample import DEFAULT_BUDGET, downsample, rolling_mean, visible_window
from radtrack.frontend.units import axis_title, gpu_family, unit_text
from radtrack.vocab.meaning import describe
from radtrack.vocab.schema import attribution_key

# Plotly's D3 palette, then a darker set: distinguishable for the first ten runs.
PALETTE: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#2e91e5", "#e15f99", "#1ca71c", "#fb0d0d", "#da16ff", "#222a2a",
    "#b68100", "#750d86", "#eb663b", "#511cfb",
)
#: the most points one figure sends to the browser, shared out between its traces: the
#: browser redraws every one of them on each zoom, so this bounds the redraw time (300 a
#: trace at 40 traces, where a subplot overlays 10 runs; 16,000 cost 12-18 ms more per
#: zoom, docs/performance.md, "Frontend")
FIGURE_POINT_BUDGET = 12_000
MIN_TRACE_BUDGET = 200
SUBPLOT_HEIGHT = 230
#: Axes that neither grow the margins to fit their labels nor hide labels past the plot:
#: plotly.js measures every tick label for both (a forced browser layout per label) on each
#: zoom, which was half of a relayout's time for 40 traces (docs/performance.md,
#: "Frontend"). The margins above fit plotly's default labels (at most 6 characters,
#: SI-suffixed: 1.95k, 80G) and two-line date labels under the x title.
FIXED_AXIS = {"automargin": False, "ticklabeloverflow": "allow"}
#: The right margin (px) that holds the chart's toolbar standing upright (plotly.js's vertical
#: modebar is about 30 px wide): the legend and the plot end where it starts.
MODEBAR_MARGIN = 40
#: The legend's rows (legend_rows): px a row, px from the plot's top to the legend's bottom
#: (over the subplot's title), the plot width assumed (a 900 px page's chart; a wider one
#: takes fewer rows and leaves a row blank at most), px a character and an entry's sample.
LEGEND_ROW, LEGEND_GAP, LEGEND_WIDTH, LEGEND_CHAR, LEGEND_ENTRY = 20, 24, 480, 6.8, 44
X_TITLES = {"seconds": "seconds since run start", "wall": "wall-clock time (UTC)",
            "step": "step"}


@dataclass(frozen=True)
class ChartOptions:
    """How the chart shows the series; ``x_range`` is in the units of ``xmode`` (wall: unix s)."""

    xmode: str = "seconds"
    smooth: int = 1
    logy: bool = False
    x_range: tuple[float, float] | None = None
    max_trace_budget: int = DEFAULT_BUDGET
    power: str = "attributed"  # a co-located run's GPU power: its share, or the GPU's (attributed.py)
    overlay: bool = False  # the same quantity of several GPUs in one subplot


def run_colours(run_ids: Sequence[str]) -> dict[str, str]:
    """A colour per run, shared by every subplot and chart: picked from the run id, so a run
    keeps its colour whatever else is selected and in whatever order it was ticked; a run
    whose colour an earlier run of the selection holds takes the next free one."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for run_id in run_ids:
        first = zlib.crc32(run_id.encode()) % len(PALETTE)
        for step in range(len(PALETTE)):
            colour = PALETTE[(first + step) % len(PALETTE)]
            if colour not in taken or len(taken) >= len(PALETTE):
                break
        out[run_id] = colour
        taken.add(colour)
    return out


def display_name(row: Mapping) -> str:
    """The run's MLflow run name, else the start of its id."""
    name = row.get("run_name")
    return name if isinstance(name, str) and name else str(row["run_id"])[:8]


def run_labels(runs: pd.DataFrame | Sequence[Mapping]) -> dict[str, str]:
    """Legend names: the run's MLflow run name (what MLflow, ``radtrack report``, the
    launcher's closing line and the sheet call it; a run the script renamed shows its new
    name), then the physical GPU(s) the run used where its tags tell (``· GPU1 5cef8446``)."""
    rows = runs.to_dict("records") if isinstance(runs, pd.DataFrame) else runs
    labels = {row["run_id"]: display_name(row) for row in rows}
    counts = Counter(labels.values())
    # Two launches of the same sheet give equal names; the run id prefix tells them apart.
    labels = {run_id: (f"{label} ({run_id[:6]})" if counts[label] > 1 else label)
              for run_id, label in labels.items()}
    # Every run logs its GPUs as gpu0.., so the physical GPU goes next to its name.
    for row in rows:
        gpu = physical_gpus_of_row(row)
        if gpu:
            labels[row["run_id"]] += f" · {gpu}"
    return labels


def legend_rows(names: Sequence[str], width: float = LEGEND_WIDTH) -> int:
    """How many rows a horizontal legend of ``names`` takes in a plot ``width`` px wide
    (plotly.js wraps entries whole; LEGEND_CHAR px a character, LEGEND_ENTRY more for the
    line sample and gap)."""
    rows, used = 1, 0.0
    for name in names:
        entry = LEGEND_ENTRY + LEGEND_CHAR * len(name)
        if used and used + entry > width:
            rows, used = rows + 1, 0.0
        used += entry
    return rows


def _fit_legend(layout: dict, names: Sequence[str]) -> None:
    """Room above the first subplot's title (22 px high) for the legend's rows: the top
    margin and the chart's height grow by it, so the legend never covers a subplot (plotly.js
    would push the margin itself, taking the height from the subplots)."""
    margin = layout["margin"]
    top = LEGEND_GAP + legend_rows(names) * LEGEND_ROW + 8
    layout["height"] += top - margin["t"]
    margin["t"] = top
    plot = max(layout["height"] - margin["t"] - margin["b"], 1)
    layout["legend"]["y"] = 1.0 + LEGEND_GAP / plot


def legend_labels(runs: pd.DataFrame | Sequence[Mapping]) -> dict[str, str]:
    """:func:`run_labels` followed by how the run shared its GPU and its script
    (``exp-1 A · MPS 50 % with 1 · train.py``, colocation.py): legends and the basket."""
    rows = runs.to_dict("records") if isinstance(runs, pd.DataFrame) else runs
    labels = run_labels(rows)
    for row in rows:
        more = description(row)
        if more:
            labels[row["run_id"]] += f" · {more}"
    return labels


def subplots(metrics: Sequence[str], overlay: bool) -> list[tuple[str, list[str]]]:
    """(title key, metrics) of each subplot: one per metric, or with ``overlay`` one per
    quantity whatever the GPU (``smi/gpu*/power_w`` holds gpu0..gpu7's power)."""
    groups: dict[str, list[str]] = {}
    for metric in metrics:
        groups.setdefault(gpu_family(metric) if overlay else metric, []).append(metric)
    return list(groups.items())


_DASHES = ("solid", "dot", "dash", "dashdot", "longdash", "longdashdot")
#: the longest y axis title one line of a subplot's height holds (SUBPLOT_HEIGHT at 12 px)
TITLE_LINE_CHARS = 30


#: what a power subplot shows where its traces are runs' attributed shares (attributed.py)
_SHARE_KEY = attribution_key("gpu0", "attributed_power_w")


def y_title(key: str, shares: str = "") -> dict:
    """A subplot's y axis title: what the series is and whose, with its unit (radtrack/store/
    meaning.py: ``run CPU (% of one core)``, ``host CPU (% of all cores)``); ``shares``:
    ``all`` or ``some`` where its traces are runs' attributed power instead of the GPU's. A
    title longer than the subplot is high breaks before its unit, rather than running into
    the next one."""
    title = axis_title(_SHARE_KEY if shares == "all" else key)
    if shares == "some":  # "GPU power, or the run's share (W)"
        whole, share = describe(key), describe(_SHARE_KEY)
        title = f"{whole.name}, or the run's share ({share.unit_text})"
    if len(title) > TITLE_LINE_CHARS and title.endswith(")") and " (" in title:
        name, _, unit = title.rpartition(" (")
        title = f"{name}<br>({unit}"
    return {"text": title, "font": {"size": 12}}


def trace_budget(n_traces: int, max_per_trace: int = DEFAULT_BUDGET,
                 figure_budget: int = FIGURE_POINT_BUDGET) -> int:
    """Points per trace so that the whole figure stays within ``figure_budget``."""
    if n_traces <= 0:
        return max_per_trace
    return int(max(MIN_TRACE_BUDGET, min(max_per_trace, figure_budget // n_traces)))


def trace_points(series: Series, options: ChartOptions, budget: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) a trace shows: smoothed at full resolution, cut to the view, downsampled."""
    ordered = series.by_x(options.xmode)
    x = ordered.x(options.xmode)
    y = rolling_mean(ordered.value, options.smooth) if options.smooth > 1 else ordered.value
    if options.x_range is not None:
        window = visible_window(x, *options.x_range)
        x, y = x[window], y[window]
    return downsample(x, y, budget)


def typed_array(values: np.ndarray, dtype: str = "f8") -> dict[str, str]:
    """A numpy array as plotly.js's base64 typed-array spec: about 3x smaller than JSON numbers,
    and decoded by the browser without parsing text."""
    data = np.ascontiguousarray(values, dtype=f"<{dtype}")
    return {"dtype": dtype, "bdata": base64.b64encode(data.tobytes()).decode("ascii")}


def decode_array(value: object) -> np.ndarray:
    """The inverse of :func:`typed_array` (plain lists pass through)."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=f"<{value['dtype']}")
    return np.asarray(value)


# The parts of plotly_white's layout a line chart uses, written into the figure instead of
# a ``layout.template``: plotly.js compares an object-valued template (or ``layout.meta``)
# by identity, and a re-applied figure brings a new layout object, so a template made each
# such update replot the whole chart (benchmarks/results/performance-history.md, "Frontend", first rework).
_WHITE_TOP = ("autotypenumbers", "font", "hoverlabel", "paper_bgcolor", "plot_bgcolor",
              "colorway")


def _white() -> dict:
    global _WHITE
    if _WHITE is None:
        layout = pio.templates["plotly_white"].to_plotly_json()["layout"]
        _WHITE = {"top": {k: layout[k] for k in _WHITE_TOP if k in layout},
                  "xaxis": _fixed(layout.get("xaxis", {})),
                  "yaxis": _fixed(layout.get("yaxis", {})),
                  "annotation": layout.get("annotationdefaults", {})}
    return _WHITE


_WHITE: dict | None = None


def _fixed(axis: Mapping) -> dict:
    """A template axis made :data:`FIXED_AXIS`, its title without ``standoff`` (placed from
    the labels' measured depth, a measurement on every redraw otherwise)."""
    out = {**axis, **FIXED_AXIS}
    if isinstance(out.get("title"), Mapping):
        out["title"] = {k: v for k, v in out["title"].items() if k != "standoff"}
    return out


def _merged(base: Mapping, own: Mapping) -> dict:
    """``base`` overridden by ``own``, nested dicts merged (a template's defaults, made explicit)."""
    out = copy.deepcopy(dict(base))
    for key, value in own.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def chart_arrays(metrics: Sequence[str], run_ids: Sequence[str],
                 series: Mapping[tuple[str, str], Series], options: ChartOptions
                 ) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(metric, run, x, y) of every trace, in the figure's order: one per run that has the
    metric, metric by metric; x in the axis' units (wall clock: ms since the epoch)."""
    present = [(m, r) for m in metrics for r in run_ids if len(series.get((r, m), ())) > 0]
    budget = trace_budget(len(present), options.max_trace_budget)
    out = []
    for metric, run_id in present:
        x, y = trace_points(series[(run_id, metric)], options, budget)
        if options.xmode == "wall":
            x = x * 1000.0  # a date axis reads numbers as milliseconds since the epoch
        out.append((metric, run_id, x, y))
    return out


def _shares(members: Sequence[str], present: set[tuple[str, str]],
            attributed: set[tuple[str, str]]) -> str:
    """``all``, ``some`` or '': how many of a subplot's traces show a run's attributed power."""
    shown = [pair for pair in present if pair[1] in members]
    swapped = [pair for pair in shown if pair in attributed]
    return "" if not swapped else "all" if len(swapped) == len(shown) else "some"


def build_chart(metrics: Sequence[str], run_ids: Sequence[str], labels: Mapping[str, str],
                series: Mapping[tuple[str, str], Series], options: ChartOptions,
                uirevision: str = "chart", attributed: set[tuple[str, str]] | None = None,
                colours: Mapping[str, str] | None = None) -> dict:
    """One subplot per metric (per quantity with ``options.overlay``; one shared x axis), one
    trace per run that has the metric; ``attributed``: the (run, metric) pairs showing the
    run's attributed power instead of the GPU's (attributed.py). ``run_ids`` may be lanes, a
    multi-node run's nodes (nodes.py), each with its ``colours`` entry and legend group.

    Returns the figure as a plain dict: plotly.py's validating objects cost 50-150 ms for
    40 traces, which every zoom would pay again.
    """
    if not metrics or not run_ids:
        return empty_figure("Pick runs and at least one metric")
    colours = dict(colours or run_colours(run_ids))
    groups = subplots(metrics, options.overlay)
    rows = len(groups)
    gap = min(0.08, 0.3 / rows)
    height = (1.0 - gap * (rows - 1)) / rows
    white = _white()
    present = {(r, m) for m in metrics for r in run_ids if len(series.get((r, m), ())) > 0}
    titles = {key: y_title(key, _shares(members, present, attributed or set()))
              for key, members in groups}
    # a two-line y title (y_title) takes one more line's width at the left
    two_lines = any("<br>" in title["text"] for title in titles.values())
    margin = {"l": 84 if two_lines else 70, "r": MODEBAR_MARGIN, "t": 40,
              "b": 64 if options.xmode == "wall" else 50}
    total = SUBPLOT_HEIGHT * rows + 90
    layout: dict[str, object] = {
        **copy.deepcopy(white["top"]), "height": total, "uirevision": uirevision,
        "margin": margin,
        # one hover box for every run at the cursor's x (the runs of the subplot under it)
        "hovermode": "x unified",
        # above the first subplot's title (_fit_legend): a horizontal legend spans the plot's
        # width at most, so the toolbar (modebar) stands upright in the right margin beside
        # it, never over it (MODEBAR_MARGIN)
        "legend": {"orientation": "h", "yanchor": "bottom", "x": 0},
        "modebar": {"orientation": "v"},
        "annotations": [],
    }
    x_range = None
    if options.x_range is not None:
        lo, hi = options.x_range
        x_range = [lo * 1000.0, hi * 1000.0] if options.xmode == "wall" else [lo, hi]
    # One x axis shared by every subplot (anchored under the last one), not one matched
    # axis per subplot: a zoom sets one range, and each redraw lays out one x axis, not
    # one per metric.
    # Axis types given rather than guessed: plotly.js guesses a type from the data again
    # on every zoom's restyle (a scan of every trace's arrays).
    xaxis: dict[str, object] = {"anchor": "y" if rows == 1 else f"y{rows}", "domain": [0.0, 1.0],
                                "showgrid": True, "title": {"text": X_TITLES[options.xmode]},
                                "type": "date" if options.xmode == "wall" else "linear"}
    if x_range is not None:
        xaxis["range"] = x_range
    layout["xaxis"] = _merged(white["xaxis"], xaxis)
    row_of: dict[str, int] = {}
    for row, (title_key, members) in enumerate(groups, start=1):
        top = 1.0 - (row - 1) * (height + gap)
        suffix = "" if row == 1 else str(row)
        # fixedrange: a box zoom zooms x only, and y refits the window's data (a spike
        # zoomed to stays in view)
        yaxis: dict[str, object] = {"anchor": "x", "domain": [max(top - height, 0.0), top],
                                    "type": "log" if options.logy else "linear",
                                    "fixedrange": True, "title": titles[title_key]}
        if options.logy:
            yaxis["tickformat"] = "~s"  # 100, 200, 500 rather than a digit per minor tick
        layout[f"yaxis{suffix}"] = _merged(white["yaxis"], yaxis)
        layout["annotations"].append(_merged(white["annotation"], {  # type: ignore[union-attr]
            "text": title_key, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5,
            "y": top, "xanchor": "center", "yanchor": "bottom", "font": {"size": 14}}))
        row_of.update({metric: row for metric in members})
    overlaid = {m for _, members in groups for m in members if len(members) > 1}
    traces = []
    in_legend: set[str] = set()
    extent = [np.inf, -np.inf]
    for metric, run_id, x, y in chart_arrays(metrics, run_ids, series, options):
        if len(x):
            extent = [min(extent[0], float(x[0])), max(extent[1], float(x[-1]))]
        suffix = "" if row_of[metric] == 1 else str(row_of[metric])
        label = labels.get(run_id, run_id[:8])
        dash = "solid"
        if metric in overlaid:
            gpu = metric.split("/")[1]
            label += f" · {gpu}"
            dash = _DASHES[int(gpu[3:]) % len(_DASHES)] if gpu[3:].isdigit() else "solid"
        if attributed and (run_id, metric) in attributed:
            label += " (attributed)"
        group = label if metric in overlaid else run_id
        unit = unit_text(metric)
        traces.append({
            "type": "scatter", "mode": "lines", "x": typed_array(x), "y": typed_array(y, "f4"),
            "xaxis": "x", "yaxis": f"y{suffix}", "name": label, "legendgroup": group,
            "showlegend": group not in in_legend, "meta": [run_id, metric],
            "line": {"color": colours[run_id], "width": 1.4, "dash": dash},
            "hovertemplate": f"%{{y:.4g}}{' ' + unit if unit else ''}",
        })
        in_legend.add(group)
    _fit_legend(layout, [t["name"] for t in traces if t["showlegend"]])
    if x_range is None and extent[0] < extent[1]:
        # The whole runs as an explicit range rather than autorange: the first zoom then
        # changes a range, as every later one does, instead of leaving autorange, which
        # plotly.js answers with one more full redraw (docs/performance.md, "Frontend").
        layout["xaxis"]["range"] = extent  # type: ignore[index]
    return {"data": traces, "layout": layout}
