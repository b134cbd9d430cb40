"""The export buttons: chart images, the selected series, the whole view."""

from __future__ import annotations

import time

from dash import Dash, Input, Output, State, ctx, dcc, no_update

from radtrack.frontend import exports
from radtrack.frontend.callbacks_chart import chart_figure
from radtrack.frontend.callbacks_select import current_view
from radtrack.frontend.chart_query import chart_inputs
from radtrack.frontend.data import DataSource

EXPORTS = ("png", "svg", "pdf", "csv", "json", "view")


def register(app: Dash, source: DataSource) -> None:
    @app.callback(Output("download", "data"), Output("export-msg", "children"),
                  *[Input(f"export-{kind}", "n_clicks") for kind in EXPORTS],
                  State("selection", "data"), State("metrics", "value"), State("xmode", "value"),
                  State("smooth", "value"), State("logy", "value"), State("view-range", "data"),
                  State("experiment", "value"), State("workload", "value"),
                  prevent_initial_call=True)
    def export(*args):
        selection, chosen, xmode, smooth, logy, view_range, experiment, workload = args[len(EXPORTS):]
        kind = str(ctx.triggered_id).removeprefix("export-")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        if kind == "view":
            view = current_view(selection, chosen, xmode, smooth, logy, experiment, workload)
            text = exports.view_json(view.to_dict(), source.runs(selection or []),
                                     source.tracking_uri)
            return dcc.send_string(text, f"radtrack-view-{stamp}.json"), "View exported."
        runs, metrics, options, rev = chart_inputs(source, selection, chosen, xmode, smooth, logy,
                                                   view_range)
        if not runs or not metrics:
            return no_update, "Nothing to export: pick runs and at least one metric."
        if kind in exports.IMAGE_FORMATS:
            fig = chart_figure(source, runs, metrics, options, rev)
            data = exports.figure_image(fig, kind)
            return dcc.send_bytes(data, f"radtrack-chart-{stamp}.{kind}"), f"Chart exported as {kind.upper()}."
        frame = exports.series_frame(source.series(runs, metrics), runs, metrics, options.xmode,
                                     options.x_range)
        if kind == "csv":
            return (dcc.send_string(exports.series_csv(frame), f"radtrack-series-{stamp}.csv"),
                    f"{len(frame)} samples exported as CSV.")
        return (dcc.send_string(exports.series_json(frame), f"radtrack-series-{stamp}.json"),
                f"{len(frame)} samples exported as JSON.")
