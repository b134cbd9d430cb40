"""The export buttons: chart images, the selected series, the whole view.

Every outcome is said next to the buttons: an image that cannot be made (kaleido or the
browser missing, a render failing) is a one-line message saying what to do, never a
silent HTTP 500 (image_export.py).
"""

from __future__ import annotations

import time
from dataclasses import replace

from dash import Dash, Input, Output, State, ctx, dcc, no_update

from radtrack.frontend import exports
from radtrack.frontend.callbacks_chart import chart_figure
from radtrack.frontend.callbacks_select import shown_view
from radtrack.frontend.chart_query import chart_inputs
from radtrack.frontend.data import DataSource
from radtrack.frontend.figures import run_labels
from radtrack.frontend.nodes import plotted

EXPORTS = ("png", "jpg", "svg", "pdf", "csv", "json", "view")


def chart_title(source: DataSource, runs: list[str], metrics: list[str]) -> str:
    """The exported chart's title and a PDF's document title: its experiment(s), runs, metrics."""
    rows = source.run_rows(runs)
    experiments = list(dict.fromkeys(str(r.get("experiment") or "?") for r in rows))
    shown = ", ".join(metrics[:3]) + (f" (+{len(metrics) - 3})" if len(metrics) > 3 else "")
    return (f"radtrack · {', '.join(experiments)} · {len(runs)} run{'s' * (len(runs) != 1)}"
            f" · {shown}")


def register(app: Dash, source: DataSource) -> None:
    @app.callback(Output("download", "data"), Output("export-msg", "children"),
                  *[Input(f"export-{kind}", "n_clicks") for kind in EXPORTS],
                  State("selection", "data"), State("metrics", "value"), State("xmode", "value"),
                  State("smooth", "value"), State("logy", "value"), State("view-range", "data"),
                  State("experiment", "value"), State("workload", "value"),
                  State("power", "value"), State("overlay", "value"),
                  prevent_initial_call=True)
    def export(*args):
        (selection, chosen, xmode, smooth, logy, view_range, experiment, workload, power,
         overlay) = args[len(EXPORTS):]
        kind = str(ctx.triggered_id).removeprefix("export-")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        if kind == "view":
            view = shown_view(source, selection, chosen, xmode, smooth, logy, experiment,
                              workload, power, overlay, view_range)
            text = exports.view_json(view.to_dict(), source.runs(selection or []),
                                     source.tracking_uri)
            return dcc.send_string(text, f"radtrack-view-{stamp}.json"), "View exported."
        runs, metrics, options, rev = chart_inputs(source, selection, chosen, xmode, smooth, logy,
                                                   view_range, power, overlay)
        if not runs or not metrics:
            return no_update, "Nothing to export: pick runs and at least one metric."
        if kind in exports.IMAGE_FORMATS:
            fig = chart_figure(source, runs, metrics, options, rev)
            try:
                data = exports.render(fig, kind, chart_title(source, runs, metrics))
            except exports.ExportError as exc:
                return no_update, f"No {kind.upper()}: {exc}"
            return (dcc.send_bytes(data, f"radtrack-chart-{stamp}.{kind}"),
                    f"Chart exported as {kind.upper()}.")
        # every node's series (nodes.py), each as measured: a metric's samples, never a
        # co-located run's attributed share standing in for them (attributed.py)
        lanes, series, _ = plotted(source, runs, metrics, replace(options, power="gpu"))
        frame = exports.series_frame(series, lanes, metrics, options.xmode, options.x_range,
                                     run_labels(source.run_rows(runs)))
        if kind == "csv":
            return (dcc.send_string(exports.series_csv(frame), f"radtrack-series-{stamp}.csv"),
                    f"{len(frame)} samples exported as CSV.")
        return (dcc.send_string(exports.series_json(frame), f"radtrack-series-{stamp}.json"),
                f"{len(frame)} samples exported as JSON.")
