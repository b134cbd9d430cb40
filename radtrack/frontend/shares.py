"""The "Energy shares" tab: for the picked workload, each run's attributed power per GPU,
stacked with ``other`` and ``idle``, from the parent run's ``attribution/power.parquet``
(radtrack/postrun/accounting.py). The stack's top is the GPU's measured power. Below it,
each party's energy per GPU with its percentage of the GPU's total, and above that the
workload's stp, antt and energy_vs_serial_pct with their 95 % intervals from repeats.

Every header, axis title and unit is the vocabulary's (radtrack/vocab/meaning.py): the table
is the ``shares`` table of the owner's words (``part``, ``party``, ``energy_j``,
``share_of_device_pct``), headed as the Summary is (columns.py), the axes say the attributed
power series' label, and the workload's figures go by their report column names, as the
launcher's closing line says them (radtrack/compute/colocation.py figures_said)."""

from __future__ import annotations

import tempfile
import threading

import pandas as pd
import plotly.graph_objects as go
from dash import Dash, Input, Output, html
from dash.exceptions import PreventUpdate
from mlflow import MlflowClient

from radtrack.compute.attribution import IDLE, OTHER
from radtrack.compute.colocation import figures_said
from radtrack.frontend.columns import column_help, column_title
from radtrack.frontend.figures import empty_figure, run_colours
from radtrack.frontend.units import axis_title
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe
from radtrack.vocab.schema import POWER_ARTIFACT

BUCKET_COLOURS = {OTHER: "#7f7f7f", IDLE: "#d0d0d0"}
#: the owner's table of the shares panel's columns (radtrack/vocab/meaning_words.py)
TABLE = "shares"
#: its columns, in the order shown: the device, whose share, its energy, its share of the device's
COLUMNS = ("part", "party", "energy_j", "share_of_device_pct")
#: the series a panel stacks: each party's attributed power on one device
POWER_SERIES = "attributed_power_w"
#: the x axis: the page's own clock, the main chart's "seconds since run start" for a workload
X_TITLE = "seconds since the workload's start"


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
    # each run in the colour the chart and the basket give it (picked from its run id)
    ids = table.drop_duplicates("party").set_index("party")["run_id"] if "run_id" in table else {}
    runs = sorted(str(r) for r in set(ids.values if len(ids) else []) if r)
    colours = {party: run_colours(runs)[str(run_id)] for party, run_id in
               (ids.items() if len(ids) else []) if run_id}
    colours.update(BUCKET_COLOURS)
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
                fillcolor=colours.get(party), marker={"color": colours.get(party)},
))
    n = len(gpus)
    unit = describe(schema.attribution_key(gpus[0], POWER_SERIES)).unit
    for trace in fig.data:  # the unit of the series stacked, as the owner says it
        trace.hovertemplate = "%{y:.1f} " + unit + "<extra>" + trace.name + "</extra>"
    layout: dict[str, object] = {"height": 260 * n + 60, "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
                                 "legend": {"orientation": "h"}}
    for i, gpu in enumerate(gpus):
        axis = "" if i == 0 else str(i + 1)
        top = 1 - i / n
        # "gpu0: run's share of GPU power (W)": the stacked series as the owner labels it
        title = f"{gpu}: {axis_title(schema.attribution_key(gpu, POWER_SERIES))}"
        layout[f"yaxis{axis}"] = {"title": {"text": title, "font": {"size": 12}},
                                  "domain": [top - 1 / n + 0.06, top]}
        layout[f"xaxis{axis}"] = {"anchor": f"y{axis}", "title": X_TITLE if i == n - 1 else None}
    fig.update_layout(**layout)
    return fig


def share_totals(table: pd.DataFrame | None) -> list[dict]:
    """Each party's energy on each GPU, and its percentage of that GPU's measured energy:
    :data:`COLUMNS` (part: the GPU), then each GPU's total (party ``total``)."""
    if table is None or table.empty:
        return []
    energy = (table["energy_j"] if "energy_j" in table.columns
              else table["power_w"] * (table["end"] - table["time"]))
    sums = energy.groupby([table["gpu"], table["party"]]).sum()
    out = []
    for gpu in sorted(table["gpu"].unique(), key=lambda g: (len(g), g)):
        part = sums.loc[gpu]
        total = float(part.sum())
        parties = sorted(set(part.index) - {OTHER, IDLE}) + [p for p in (OTHER, IDLE) if p in part.index]
        for party in parties:
            joules = float(part[party])
            out.append({"part": gpu, "party": party, "energy_j": joules,
                        "share_of_device_pct": 100.0 * joules / total if total else float("nan")})
        out.append({"part": gpu, "party": "total", "energy_j": total, "share_of_device_pct": 100.0})
    return out


def totals_table(records: list[dict]) -> html.Table | html.P:
    if not records:
        return html.P("")
    # each header the column's name and the owner's unit, its long name the tooltip
    head = html.Tr([html.Th(column_title(c, TABLE), title=column_help(c, TABLE)) for c in COLUMNS])
    rows = [html.Tr([html.Td(r["part"]), html.Td(r["party"]),
                     html.Td(f"{r['energy_j']:,.0f}", className="numeric"),
                     html.Td(f"{r['share_of_device_pct']:.1f}", className="numeric")],
                    className="total" if r["party"] == "total" else None)
            for r in records]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="shares-totals")


def interference_text(metrics: dict[str, float]) -> str:
    """The workload's stp, antt and energy_vs_serial_pct as its parent run stored them
    (``summary/workload/...``, radtrack/postrun/accounting.py), each with its 95 % interval
    where repeats gave one (docs/analysis.md, Intervals from repeats), in the launcher's
    closing line's words (the report's column names); '' without an stp."""
    prefix = schema.workload_key("")
    totals = {k[len(prefix):]: v for k, v in metrics.items() if k.startswith(prefix)}
    def value(key: str) -> float | None:
        v = totals.get(key)
        return float(v) if isinstance(v, (int, float)) and v == v else None

    if value("stp") is None:
        return ""
    text = figures_said(totals)
    if value("stp_lo") is None:
        return text + " (no 95 % intervals: no repeats of these rows)"
    return text + " ([95 % intervals] from repeats)"


def register(app: Dash, tracking_uri: str) -> None:
    tables = PowerTables(tracking_uri)

    @app.callback(Output("shares", "figure"), Output("shares-totals", "children"),
                  Input("tabs", "value"), Input("workload", "value"), prevent_initial_call=True)
    def draw_shares(tab, workload):
        if tab != "shares":
            raise PreventUpdate
        if not workload or ":" in str(workload):  # a lone run or an orphaned workload
            return empty_figure("Pick a workload to see how its GPUs' energy was shared"), ""
        table = tables.get(str(workload))
        try:  # the workload's interference figures, beside how its energy was shared
            metrics = MlflowClient(tracking_uri=tracking_uri).get_run(str(workload)).data.metrics
        except Exception:  # noqa: BLE001 - a run gone or a store away: the shares still show
            metrics = {}
        line = interference_text(metrics)
        totals = totals_table(share_totals(table))
        return shares_figure(table), html.Div([html.P(line, className="interference"), totals]) \
            if line else totals
