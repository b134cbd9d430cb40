"""The "Energy shares" tab: for the picked workload, each run's attributed power per GPU,
stacked with ``other`` and ``idle``, from the parent run's ``attribution/power.parquet``
(radtrack/postrun/accounting.py). The stack's top is the GPU's measured power."""

from __future__ import annotations

import tempfile
import threading

import pandas as pd
import plotly.graph_objects as go
from dash import Dash, Input, Output
from dash.exceptions import PreventUpdate
from mlflow import MlflowClient

from radtrack.analysis.attribution import IDLE, OTHER
from radtrack.frontend.figures import empty_figure
from radtrack.store.schema import POWER_ARTIFACT

BUCKET_COLOURS = {OTHER: "#7f7f7f", IDLE: "#d0d0d0"}


class PowerTables:
    """The parents' power tables; a finished workload's table never changes, so each is
    downloaded once."""

    def __init__(self, tracking_uri: str):
        self.tracking_uri = tracking_uri
        self._cache: dict[str, pd.DataFrame | None] = {}
        self._lock = threading.Lock()

    def get(self, parent_id: str) -> pd.DataFrame | None:
        with self._lock:
            if parent_id in self._cache:
                return self._cache[parent_id]
        client = MlflowClient(tracking_uri=self.tracking_uri)
        folder = POWER_ARTIFACT.rsplit("/", 1)[0]
        if not any(a.path == POWER_ARTIFACT for a in client.list_artifacts(parent_id, folder)):
            table = None  # recorded before co-location accounting, or still running
        else:
            with tempfile.TemporaryDirectory() as tmp:
                table = pd.read_parquet(client.download_artifacts(parent_id, POWER_ARTIFACT, tmp))
        if table is not None or client.get_run(parent_id).info.status != "RUNNING":
            with self._lock:
                self._cache[parent_id] = table
        return table


def shares_figure(table: pd.DataFrame | None) -> go.Figure | dict:
    """Stacked areas of attributed power (W) over seconds since the workload started, one
    panel per GPU; runs first, then ``other`` and ``idle``."""
    if table is None or table.empty:
        return empty_figure("No co-location accounting for this workload (recorded before it "
                            "existed, without smi, or still running)")
    gpus = sorted(table["gpu"].unique(), key=lambda g: (len(g), g))
    t0 = float(table["time"].min())
    fig = go.Figure()
    for i, gpu in enumerate(gpus):
        part = table[table["gpu"] == gpu]
        parties = sorted(set(part["party"]) - {OTHER, IDLE}) + [OTHER, IDLE]
        axis = "" if i == 0 else str(i + 1)
        for party in parties:
            one = part[part["party"] == party].sort_values("time")
            if one.empty:
                continue
            fig.add_trace(go.Scatter(
                x=(one["time"] - t0).to_numpy(), y=one["power_w"].to_numpy(), name=f"{gpu} {party}",
                legendgroup=gpu, stackgroup=f"g{i}", mode="lines", line={"width": 0.5},
                line_shape="hv", xaxis=f"x{axis}", yaxis=f"y{axis}",
                fillcolor=BUCKET_COLOURS.get(party), marker={"color": BUCKET_COLOURS.get(party)},
                hovertemplate="%{y:.1f} W<extra>" + f"{gpu} {party}</extra>"))
    n = len(gpus)
    layout: dict[str, object] = {"height": 260 * n + 60, "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
                                 "legend": {"orientation": "h"}}
    for i, gpu in enumerate(gpus):
        axis = "" if i == 0 else str(i + 1)
        top = 1 - i / n
        layout[f"yaxis{axis}"] = {"title": f"{gpu} power (W)", "domain": [top - 1 / n + 0.06, top]}
        layout[f"xaxis{axis}"] = {"anchor": f"y{axis}", "title": "seconds since the workload started"
                                  if i == n - 1 else None}
    fig.update_layout(**layout)
    return fig


def register(app: Dash, tracking_uri: str) -> None:
    tables = PowerTables(tracking_uri)

    @app.callback(Output("shares", "figure"), Input("tabs", "value"), Input("workload", "value"), prevent_initial_call=True)
    def draw_shares(tab, workload):
        if tab != "shares":
            raise PreventUpdate
        if not workload or ":" in str(workload):  # a lone run or an orphaned workload
            return empty_figure("Pick a workload to see how its GPUs' energy was shared")
        return shares_figure(tables.get(str(workload)))
