"""Callbacks of the metric picker, the chart (with zoom re-sampling and live refresh),
the summary table and the correlation heatmap."""

from __future__ import annotations

import numpy as np
import pandas as pd
from dash import ClientsideFunction, Dash, Input, Output, State, ctx
from dash.exceptions import PreventUpdate

from radtrack.compute.correlation import correlate
from radtrack.frontend.attributed import DEFAULT_POWER
from radtrack.frontend.chart_query import (  # noqa: F401 (parse_range, revision: re-exports)
    QUERY_KEY,
    chart_inputs,
    chart_query,
    parse_range,
    revision,
)
from radtrack.frontend.columns import column_help, column_title
from radtrack.frontend.data import DataSource, long_frame
from radtrack.frontend.figures import (
    ChartOptions,
    build_chart,
    correlation_figure,
    empty_figure,
    legend_labels,
    run_labels,
)
from radtrack.frontend.nodes import (
    lane,
    lane_colours,
    lane_labels,
    lane_series,
    node_label,
    nodes_note,
    plotted,
    run_lanes,
    split_lane,
    whole_run_label,
    with_node_rows,
)
from radtrack.frontend.summaries import (  # noqa: F401 (summary_frame: re-export)
    EMPTY_SUMMARY,
    SummaryCache,
    summary_frame,
)
from radtrack.vocab import schema
from radtrack.vocab.meaning import is_count

# Listener groups in the order a reader scans them; anything else follows, the script's
# own metrics (no listener prefix) come last.
GROUP_ORDER = ("smi", "dcgm", "top", "iostat", "tegrastats", "nsys", "ncu")
SCRIPT_GROUP = "script"
# '#' cannot occur in an MLflow metric key, so a header never collides with a metric.
HEADER_PREFIX = "#group "

# A zoom or pan is answered outside Dash: assets/zoom.js posts the figure's chart query
# (figure["radtrack"], which the chart keeps on its plot element, assets/chart.js) and the
# new x range to /_radtrack/zoom (zoom_data.py) and restyles the plot with the binary
# answer; it then records the range in the "view-range" store ({rev, x}), which live
# refreshes and exports read.

TABS_JS = """
function(tab) {
    const show = {display: 'block'}, hide = {display: 'none'};
    return [tab === 'summary' ? show : hide, tab === 'correlation' ? show : hide,
            tab === 'shares' ? show : hide, tab === 'compare' ? show : hide];
}
"""


def metric_group(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else SCRIPT_GROUP


def metric_options(keys: list[str], search: str | None, chosen: list[str],
                   note: str = "") -> list[dict]:
    """Checklist options grouped by listener, each group under a disabled header row; the
    search keeps the keys holding each of its words, in any order (``gpu5 power``), and
    says so when none does; ``note`` (a selection's nodes, nodes.py) heads the list."""
    words = (search or "").lower().split()
    shown = [k for k in keys if all(w in k.lower() for w in words) or k in chosen]
    if words and not any(k not in chosen for k in shown):
        shown_note = {"label": f"no metric matches '{' '.join(words)}'",
                      "value": HEADER_PREFIX + "no match", "disabled": True}
    else:
        shown_note = None
    groups: dict[str, list[str]] = {}
    for key in shown:
        groups.setdefault(metric_group(key), []).append(key)

    def order(group: str) -> tuple[int, str]:
        if group in GROUP_ORDER:
            return (GROUP_ORDER.index(group), group)
        return (len(GROUP_ORDER) + (group == SCRIPT_GROUP), group)

    options: list[dict] = []
    for group in sorted(groups, key=order):
        # Plain-string labels: component labels break Dash 4's checklist when options shrink.
        options.append({"label": group.upper(), "value": HEADER_PREFIX + group, "disabled": True})
        for key in groups[group]:
            short = key[len(group) + 1:] if group != SCRIPT_GROUP else key
            options.append({"label": short, "value": key})
    notes = [{"label": note, "value": HEADER_PREFIX + "nodes", "disabled": True}] if note else []
    return [*notes, shown_note, *options] if shown_note else [*notes, *options]


def listed_metrics(source: DataSource, runs: list[str], search: str | None,
                   chosen: list[str]) -> list[dict]:
    """The metric list of a selection: :func:`metric_options` of its keys, headed by what its
    multi-node runs draw (nodes.py)."""
    if not runs:
        return metric_options([], search, chosen)
    return metric_options(source.metric_keys(runs), search, chosen,
                          nodes_note(source.run_rows(runs)))


def chart_figure(source: DataSource, selection: list[str], metrics: list[str],
                 options: ChartOptions, rev: str):
    """The chart: a trace per run and metric, per node of a multi-node run (nodes.py)."""
    if not selection or not metrics:
        return build_chart(metrics, selection, {}, {}, options, uirevision=rev)
    rows = source.run_rows(selection)
    lanes, series, attributed = plotted(source, selection, metrics, options)
    return build_chart(metrics, lanes, lane_labels(legend_labels(rows), rows), series, options,
                       uirevision=rev, attributed=attributed,
                       colours=lane_colours(selection, lanes))


def chart_answer(source: DataSource, selection, chosen, xmode, smooth, logy, view_range,
                 power: object = DEFAULT_POWER, overlay: object = False) -> tuple[dict, str]:
    """The chart's figure (with the query zoom.js sends back) and its key."""
    runs, metrics, options, rev = chart_inputs(source, selection, chosen, xmode, smooth, logy,
                                               view_range, power, overlay)
    figure = chart_figure(source, runs, metrics, options, rev)
    if runs and metrics:
        figure[QUERY_KEY] = chart_query(runs, metrics, options.xmode, smooth, logy, rev,
                                        options.power, options.overlay)
    return figure, f"{rev}:{options.smooth}"


def _rounded(value: object, column: str = "") -> object:
    """A cell as the page sends it: 4 significant digits, a count as a whole number (as the
    report's files write it: radtrack/vocab/meaning.py ``is_count``), NaN as None."""
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return None
        return int(value) if is_count(column) else float(f"{value:.4g}")
    return value


def summary_answer(source: DataSource, summaries: SummaryCache, selection: list[str]) -> dict:
    """The Summary table's rows for ``selection`` ({columns, rows}), as the page draws them."""
    if not selection:
        return EMPTY_SUMMARY
    table = summaries.table(selection)
    labels = run_labels(source.run_rows(selection))
    table.insert(0, "run", [labels.get(r, r) for r in table["run_id"]])
    table = with_node_rows(table, source.run_rows(selection), labels)  # a row per node (nodes.py)
    # The run label already says experiment, workload and letter.
    table = table.drop(columns=["run_id"])
    # headers say what each energy is and the unit (columns.py); the tooltip says more
    columns = [{"name": column_title(c), "id": c, "help": column_help(c),
                "type": "numeric" if pd.api.types.is_numeric_dtype(table[c]) else "text"}
               for c in table.columns]
    records = [{k: _rounded(v, k) for k, v in row.items()} for row in table.to_dict("records")]
    return {"columns": columns, "rows": records}


def register(app: Dash, source: DataSource, summaries: SummaryCache) -> None:
    # prevent_initial_call on every server callback: the layout holds their answers on
    # page load (a shared link's included, restore.py), so a page starts with no request.

    @app.callback(Output("metrics", "options"),
                  Input("selection", "data"), Input("metric-search", "value"),
                  Input("metrics", "value"), prevent_initial_call=True)
    def control_metrics(selection, search, chosen):
        # Only the options: the ticked metrics are the user's (or a restored view's, set by
        # callbacks_select.apply_view together with the runs), so the chart never waits
        # for this callback.
        chosen = [m for m in (chosen or []) if not m.startswith(HEADER_PREFIX)]
        # A tick answers with the options too (the keys are cached): Dash keeps only the
        # latest answer of a callback, so a tick sent while the options of a new selection
        # were on their way used to drop them (a script run's metrics never listed).
        return listed_metrics(source, list(selection or []), search, chosen)

    app.clientside_callback(TABS_JS, Output("summary-panel", "style"),
                            Output("corr-panel", "style"), Output("shares-panel", "style"),
                            Output("compare-panel", "style"),
                            Input("tabs", "value"), prevent_initial_call=True)

    # The figure goes to the chart as the server wrote it; the chart decodes its arrays.
    @app.callback(Output("chart", "figure"), Output("chart-key", "data"),
                  Input("selection", "data"), Input("metrics", "value"), Input("xmode", "value"),
                  Input("smooth", "value"), Input("logy", "value"), Input("live", "n_intervals"),
                  Input("power", "value"), Input("overlay", "value"),
                  State("view-range", "data"), State("chart-key", "data"), prevent_initial_call=True)
    def draw_chart(selection, chosen, xmode, smooth, logy, _tick, power, overlay, view_range,
                   shown):
        live = ctx.triggered_id == "live"
        if live and not source.any_live(selection or []):
            raise PreventUpdate
        figure, key = chart_answer(source, selection, chosen, xmode, smooth, logy, view_range,
                                   power, overlay)
        if not live and key == shown:
            raise PreventUpdate  # already drawn (a restored link draws it in its own answer)
        return figure, key

    @app.callback(Output("live", "disabled"),
                  Input("selection", "data"), Input("live", "n_intervals"), prevent_initial_call=True)
    def follow_live_runs(selection, _tick):
        return not source.any_live(selection or [])

    app.clientside_callback(
        ClientsideFunction(namespace="radtrack_summary", function_name="draw"),
        Output("summary", "data-rows"), Input("summary-data", "data"))

    # The layout holds the answer for the page's selection (layout.py, restore.py).
    @app.callback(Output("summary-data", "data"),
                  Input("tabs", "value"), Input("selection", "data"), Input("live", "n_intervals"),
                  prevent_initial_call=True)
    def summary_table(tab, selection, _tick):
        if tab != "summary":
            raise PreventUpdate
        if ctx.triggered_id == "live" and not source.any_live(selection or []):
            raise PreventUpdate
        return summary_answer(source, summaries, list(selection or []))

    @app.callback(Output("corr", "figure"), Output("corr-scope", "options"),
                  Input("tabs", "value"), Input("selection", "data"), Input("metrics", "value"),
                  Input("corr-scope", "value"), prevent_initial_call=True)
    def correlation(tab, selection, chosen, scope):
        if tab != "correlation":
            raise PreventUpdate
        return correlation_answer(source, list(selection or []), chosen, scope)

    @app.callback(Output("corr-scope", "value"), Input("selection", "data"),
                  State("corr-scope", "value"), prevent_initial_call=True)
    def reset_scope(selection, scope):
        # a run's scope, or one of its nodes' (nodes.py lanes), while the run is selected
        return scope if isinstance(scope, str) and split_lane(scope)[0] in (selection or []) \
            else "all"


def correlation_answer(source: DataSource, selection: list[str], chosen, scope) -> tuple[dict, list]:
    """The Correlation tab: its heatmap and its scope's options: the whole selection, each
    run, and each node of a multi-node run (``node<K>/<run id>``, node 0's too). Each node's
    series are a series of their own (nodes.py lanes): a run's nodes are pooled as separate
    series, never one node's samples binned with another's."""
    rows = source.run_rows(selection) if selection else []
    by_id = {str(r["run_id"]): r for r in rows}
    labels = run_labels(source.runs(selection)) if selection else {}
    lanes = run_lanes(rows, selection)
    of_run = {r: [x for x in lanes if split_lane(x)[0] == r] for r in selection}
    options = [{"label": "whole selection", "value": "all"}]
    for run_id in selection:
        many = len(of_run[run_id]) > 1
        options.append({"label": whole_run_label(labels[run_id], by_id[run_id]) if many
                        else labels[run_id], "value": run_id})
        options += [{"label": f"{labels[run_id]} · {node_label(by_id[run_id], k)}",
                     "value": schema.node_scoped(run_id, k)}
                    for k in range(len(of_run[run_id])) if many]
    keys = set(source.metric_keys(selection)) if selection else set()
    metrics = [m for m in (chosen or []) if m in keys]
    if len(metrics) < 2:
        return empty_figure("Pick at least two metrics to correlate"), options
    named = {o["value"]: o["label"] for o in options}
    run_id, node = split_lane(scope) if isinstance(scope, str) else ("", 0)
    if isinstance(scope, str) and scope in named and scope != "all" and scope not in selection:
        shown, what = [lane(run_id, node)], named[scope]  # one node of a run
    elif scope in selection or len(selection) == 1:
        one = scope if scope in selection else selection[0]
        shown, what = of_run[one], labels[one]
    else:
        shown, what = lanes, "whole selection"
    if len(shown) > 1 and what != "whole selection":
        what += f", its {len(shown)} nodes pooled"
    frame = long_frame(lane_series(source, shown, metrics))
    present = [m for m in metrics if m in set(frame["metric"])]
    if len(present) < 2:
        return empty_figure("Fewer than two of these metrics have samples"), options
    matrix = correlate(frame, present, bin_s=1.0)
    return correlation_figure(matrix, "Pearson correlation, 1 s bins, " + what), options
