"""The page: picker (experiment -> workload -> runs), metric picker and charts, selection basket."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dash import dcc, html

from radtrack.frontend.chart import Chart
from radtrack.frontend.compare import compare_panel
from radtrack.frontend.exposure import NO_CLOUD
from radtrack.frontend.figures import empty_figure
from radtrack.frontend.health import banner
from radtrack.frontend.image_export import IMAGE_FORMATS, image_export_problem
from radtrack.frontend.picker import empty_basket, runs_hint
from radtrack.frontend.summaries import EMPTY_SUMMARY

if TYPE_CHECKING:
    from radtrack.frontend.restore import Restored

LIVE_REFRESH_MS = 3000

EXPORT_TIPS = {
    "png": "the chart as a PNG image (1200 px wide, titled)",
    "jpg": "the chart as a JPEG image (1200 px wide, titled)",
    "svg": "the chart as an SVG (vector) image",
    "pdf": "the chart as a PDF page",
    "csv": "every sample of the chart's runs and metrics (zoomed window only), with label, "
           "scope and unit",
    "json": "the same samples as JSON",
    "view": "this view (runs, metrics, axis, zoom) as JSON, to share or keep",
}

GRAPH_CONFIG = {
    "displaylogo": False,
    **NO_CLOUD,  # no "Share chart..." to Plotly's cloud (radtrack/frontend/exposure.py)
    # The server renders PNG/SVG/PDF exports; the browser's own snapshot button stays as a shortcut.
    "toImageButtonOptions": {"format": "png", "filename": "radtrack-chart"},
}


def _section(title: str, *children: object, class_name: str = "section") -> html.Section:
    return html.Section([html.H2(title), *children], className=class_name)


def picker_column(experiments: list[str], state: Restored | None = None) -> html.Aside:
    return html.Aside([
        _section("Experiments", dcc.RadioItems(
            id="experiment", options=[{"label": e, "value": e} for e in experiments],
            value=state.experiment if state else None,
            className="radio-list", inputClassName="pick", labelClassName="pick-label")),
        _section("Workloads", dcc.RadioItems(
            id="workload", options=state.workload_options if state else [],
            value=state.workload if state else None, className="radio-list",
            inputClassName="pick", labelClassName="pick-label")),
        _section(
            "Runs",
            # a short placeholder (a 250 px picker shows about 30 characters), the rest on hover
            html.Div(dcc.Input(id="run-filter", type="search", debounce=True, className="filter",
                               placeholder="filter: name or key=value"),
                     title="filter the runs: a word of the run's name, a param or tag value, "
                           "key=value for one param or tag, user=NAME"),
            html.Div([html.Button("Select workload", id="select-workload", className="button small",
                                  title="tick every run of the workload shown"),
                      html.Button("Select experiment", id="select-experiment",
                                  className="button small",
                                  title="tick every run of every workload listed")],
                     className="buttons"),
            html.Div(state.runs if state else runs_hint(None), id="runs", className="run-list"),
        ),
    ], className="picker", id="picker")


def basket_column(saved_views: list[str], state: Restored | None = None) -> html.Aside:
    return html.Aside([
        _section("Selection", html.Div(state.basket if state else empty_basket(), id="basket",
                                       className="basket"),
                 html.Button("Clear all", id="clear", className="button")),
        _section("Views",
                 dcc.Input(id="view-name", placeholder="view name", className="filter"),
                 html.Button("Save", id="save-view", className="button"),
                 dcc.Dropdown(id="views", options=saved_views, placeholder="saved views", clearable=True,
                              className="views"),
                 html.Button("Load", id="load-view", className="button"),
                 html.Div(id="view-msg", className="message", role="status")),
        export_section(image_export_problem()),
    ], className="basket-column")


def export_section(problem: str | None) -> html.Section:
    """The export buttons. ``problem``: what stops image export here (no kaleido, no
    Chromium; image_export.py), said before any click: the image buttons are disabled with
    it as their tooltip, and a line under them says it. CSV and JSON always work."""
    buttons = []
    for fmt, label in (("png", "PNG"), ("jpg", "JPG"), ("svg", "SVG"), ("pdf", "PDF"),
                       ("csv", "CSV"), ("json", "JSON"), ("view", "View JSON")):
        image = fmt in IMAGE_FORMATS
        buttons.append(html.Button(
            label, id=f"export-{fmt}", className="button small",
            disabled=bool(image and problem),
            title=(problem if image and problem else EXPORT_TIPS[fmt])))
    needs = html.P(f"PNG, JPG, SVG, PDF: {problem}", id="export-needs", className="hint")
    return _section("Export", html.Div(buttons, className="buttons"),
                    *([needs] if problem else []),
                    html.Div(id="export-msg", className="message", role="status"),
                    dcc.Download(id="download"))


def chart_controls(state: Restored | None = None) -> html.Div:
    return html.Div([
        html.Label(["x axis", dcc.RadioItems(
            id="xmode", value=state.xmode if state else "seconds", inline=True,
            options=[{"label": "seconds since start", "value": "seconds"},
                     {"label": "wall clock", "value": "wall"},
                     {"label": "step", "value": "step"}])], className="control"),
        html.Label(["smoothing (samples)", dcc.Input(
            id="smooth", type="number", min=1, max=10_000, step=1,
            value=state.smooth if state else 1, debounce=True,
            className="number")], className="control"),
        dcc.Checklist(id="logy", options=[{"label": "log y", "value": "log"}],
                      value=state.logy if state else [],
                      inline=True, className="control"),
        html.Span(dcc.Checklist(id="overlay", options=[{"label": "overlay GPUs", "value": "gpus"}],
                                value=["gpus"] if state and state.overlay else [], inline=True),
                  className="control",
                  title="one subplot per quantity: the same metric of every GPU together"),
        html.Label(["co-located GPU power", dcc.RadioItems(
            id="power", value=state.power if state else "attributed", inline=True,
            options=[{"label": "attributed share", "value": "attributed"},
                     {"label": "whole GPU", "value": "gpu"}])], className="control",
            title="a run that shared its GPU: its attributed share of the GPU's power "
                  "(co-location accounting), or the whole GPU's measured power"),
    ], className="controls")


def main_column(state: Restored | None = None) -> html.Main:
    return html.Main([
        # what of a link could not be restored (restore.py, callbacks_select.apply_view)
        html.Div(state.message if state else "", id="link-msg", className="link-msg",
                 role="status"),
        _section("Metrics",
                 dcc.Input(id="metric-search", type="search", className="filter",
                           placeholder="search metrics, e.g. power or smi/"),
                 dcc.Checklist(id="metrics", options=state.metric_options if state else [],
                               value=state.metrics if state else [], className="metric-list")),
        chart_controls(state),
        # A shared link's layout holds its chart (restore.py): drawn on the first render.
        Chart(id="chart", figure=state.figure if state else
              empty_figure("Pick runs and at least one metric"),
              config=GRAPH_CONFIG, className="chart"),
        dcc.Tabs(id="tabs", value="summary", children=[
            dcc.Tab(label="Summary", value="summary"),
            dcc.Tab(label="Correlation", value="correlation"),
            dcc.Tab(label="Energy shares", value="shares"),
            dcc.Tab(label="Compare", value="compare"),
        ]),
        # The summary's rows ({columns, rows}), drawn as a plain table by
        # assets/summary_table.js (click a header to sort).
        html.Div([dcc.Store(id="summary-data", data=state.summary if state else EMPTY_SUMMARY),
                  html.Div(id="summary", className="summary")], id="summary-panel"),
        html.Div([
            dcc.RadioItems(id="corr-scope", value="all", inline=True, options=[
                {"label": "whole selection", "value": "all"}]),
            Chart(id="corr", figure=empty_figure("Pick at least two metrics"),
                  config={"displaylogo": False, **NO_CLOUD}),
        ], id="corr-panel", style={"display": "none"}),
        html.Div([Chart(id="shares", figure=empty_figure("Pick a workload"),
                        config={"displaylogo": False, **NO_CLOUD}),
                  html.Div(id="shares-totals", className="summary")],
                 id="shares-panel", style={"display": "none"}),
        compare_panel(),
    ], className="main")


def build_layout(experiments: list[str], tracking_uri: str, saved_views: list[str],
                 state: Restored | None = None, restored: str | None = "",
                 problem: str | None = None) -> html.Div:
    """The page; ``state`` (a shared link's, restore.py) fills it in, chart and summary
    included. ``restored``: the URL query the page shows already ('' for none), or None
    when the page's query still has to be applied (callbacks_select.apply_view).
    ``problem``: the store could not be read (health.py), said in the banner."""
    return html.Div([
        dcc.Location(id="url", refresh=False),
        dcc.Store(id="restored", data=restored),
        dcc.Store(id="url-in"),
        # Written by callbacks only: a second Location keeps "URL in" and "URL out" apart,
        # so restoring a pasted link and recording the current state never form a loop.
        dcc.Location(id="url-out", refresh=False),
        dcc.Store(id="selection", data=state.selection if state else []),
        dcc.Store(id="view-range", data=state.view_range if state else None),
        # What the chart shows (callbacks_chart.chart_answer): a restored link draws the
        # chart in its restoring answer, and draw_chart then has nothing to redo.
        dcc.Store(id="chart-key", data=state.chart_key if state else None),
        # Enabled for a link to a run still going (restore.py), else by the selection.
        dcc.Interval(id="live", interval=LIVE_REFRESH_MS, disabled=not (state and state.live)),
        html.Header([html.H1("radtrack"),
                     html.Span(tracking_uri, className="uri", title="tracking store (read-only)")]),
        banner(problem),
        html.Div([picker_column(experiments, state), main_column(state),
                  basket_column(saved_views, state)],
                 className="grid"),
    ], className="page")
