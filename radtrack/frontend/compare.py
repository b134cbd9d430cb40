"""The Compare tab: one summary column of the selected runs as bars, each with its
difference and ratio to a baseline run the user picks ("which run used the most energy,
and by how much", without arithmetic).

The values are the Summary tab's (summaries.py: the launcher's stored summaries for a
finished run; a run over several nodes as a whole, ``<run> · all 2 nodes``, its energy
summed over its nodes, its per-node power and utilisation blank, as a note under the bars
says: radtrack/frontend/nodes.py), drawn as plain HTML bars: the page's plotly.js holds only scatter and
heatmap traces (page_shell.py).
"""

from __future__ import annotations

import math

import pandas as pd
from dash import Dash, Input, Output, dcc, html
from dash.exceptions import PreventUpdate

from radtrack.frontend.columns import column_help, column_title
from radtrack.frontend.data import DataSource
from radtrack.frontend.figures import run_colours, run_labels
from radtrack.frontend.nodes import node_count, whole_run_label
from radtrack.frontend.summaries import SummaryCache

DEFAULT_COLUMN = "energy_j"
#: under the bars when a compared run ran over several nodes
WHOLE_RUNS = ("A run over several nodes is compared as a whole: its span, and its energy summed "
              "over every node. Its power, utilisation and CPU are per node (blank here): each "
              "node's are in the Summary tab.")


def compare_panel() -> html.Div:
    return html.Div([
        dcc.Store(id="compare-selection"),
        html.Div([
            html.Label(["quantity", dcc.Dropdown(id="compare-column", clearable=False,
                                                 className="compare-pick")], className="control"),
            html.Label(["baseline run", dcc.Dropdown(id="compare-baseline", clearable=False,
                                                     className="compare-pick")],
                       className="control"),
        ], className="controls"),
        html.Div(html.P("Tick runs to compare them.", className="hint"), id="compare-view",
                 className="compare"),
    ], id="compare-panel", style={"display": "none"})


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _fmt(value: float | None) -> str:
    """Thousands separated, four significant digits below 1,000: 75,000 / 12.35."""
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def comparison(table: pd.DataFrame, column: str, baseline: str) -> list[dict]:
    """One record per run: run_id, value, difference and ratio to ``baseline``'s value."""
    values = {str(r): _number(v) for r, v in zip(table["run_id"], table[column], strict=True)}
    base = values.get(baseline)
    out = []
    for run_id, value in values.items():
        diff = value - base if value is not None and base is not None else None
        ratio = value / base if value is not None and base not in (None, 0.0) else None
        out.append({"run_id": run_id, "value": value, "difference": diff, "ratio": ratio})
    return out


def numeric_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c != "run_id" and pd.api.types.is_numeric_dtype(table[c])
            and table[c].notna().any()]


def run_checks_of(table: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """run id -> (its checks' short names, what they say) from the Summary's rows
    (radtrack/frontend/summaries.py ``checks`` and ``_tips``); runs without a check left out."""
    if "checks" not in table:
        return {}
    tips = table["_tips"] if "_tips" in table else pd.Series([{}] * len(table), index=table.index)
    return {str(r): (str(c), str((t or {}).get("checks", "")) if isinstance(t, dict) else "")
            for r, c, t in zip(table["run_id"], table["checks"], tips, strict=True)
            if isinstance(c, str) and c}


def compare_view(records: list[dict], column: str, baseline: str, labels: dict[str, str],
                 colours: dict[str, str], checks: dict[str, tuple[str, str]] | None = None) -> html.Table:
    """Bars scaled to the largest value, with value, difference and ratio to the baseline;
    a run with a flagged result (``checks``: :func:`run_checks_of`) says so by its name."""
    checks = checks or {}
    top = max((abs(r["value"]) for r in records if r["value"] is not None), default=0.0) or 1.0
    head = html.Tr([html.Th("run"), html.Th(column_title(column), title=column_help(column)),
                    html.Th(""), html.Th("difference to baseline"), html.Th("ratio to baseline")])
    rows = []
    for r in records:
        is_base = r["run_id"] == baseline
        width = 0.0 if r["value"] is None else 100.0 * abs(r["value"]) / top
        diff = r["difference"]
        rows.append(html.Tr([
            html.Td([labels.get(r["run_id"], r["run_id"][:8]) + (" (baseline)" if is_base else ""),
                     *([html.Span(f" ⚠ {checks[r['run_id']][0]}", className="compare-check",
                                  title=checks[r["run_id"]][1])] if r["run_id"] in checks else [])],
                    className="compare-run"),
            html.Td(_fmt(r["value"]), className="numeric compare-value"),
            html.Td(html.Div(className="compare-bar",
                             style={"width": f"{width:.1f}%", "background": colours[r["run_id"]]}),
                    className="compare-bar-cell"),
            html.Td("–" if diff is None else ("+" if diff > 0 else "") + _fmt(diff),
                    className="numeric compare-diff"),
            html.Td("–" if r["ratio"] is None else f"×{r['ratio']:.3f}",
                    className="numeric compare-ratio"),
        ], className="baseline" if is_base else None, **{"data-run": r["run_id"]}))
    return html.Table([html.Thead(head), html.Tbody(rows)])


# In the browser: the selection reaches the server only while the tab is shown, so a tick
# elsewhere costs no request (the Summary's answer is what a tick waits for).
GATE_JS = """
function(tab, selection, _tick) {
    if (tab !== 'compare') { return window.dash_clientside.no_update; }
    return {runs: selection || [], at: Date.now()};
}
"""


def register(app: Dash, source: DataSource, summaries: SummaryCache) -> None:
    app.clientside_callback(GATE_JS, Output("compare-selection", "data"),
                            Input("tabs", "value"), Input("selection", "data"),
                            Input("live", "n_intervals"), prevent_initial_call=True)

    @app.callback(Output("compare-column", "options"), Output("compare-column", "value"),
                  Output("compare-baseline", "options"), Output("compare-baseline", "value"),
                  Output("compare-view", "children"),
                  Input("compare-selection", "data"),
                  Input("compare-column", "value"), Input("compare-baseline", "value"),
                  prevent_initial_call=True)
    def draw(shown, column, baseline):
        if not isinstance(shown, dict):
            raise PreventUpdate
        selection = [r for r in shown.get("runs") or [] if isinstance(r, str)]
        if not selection:
            return [], None, [], None, html.P("Tick runs to compare them.", className="hint")
        table = summaries.table(selection)
        labels = run_labels(source.run_rows(selection))
        columns = numeric_columns(table)
        if not columns:
            return [], None, [], None, html.P("No summary values for these runs yet.",
                                              className="hint")
        if column not in columns:
            column = DEFAULT_COLUMN if DEFAULT_COLUMN in columns else columns[0]
        if baseline not in selection:
            baseline = selection[0]
        records = comparison(table, column, baseline)
        rows = {str(r["run_id"]): r for r in source.run_rows(selection)}
        # a run over several nodes is compared as a whole (summaries.py with_nodes)
        labels = {r: whole_run_label(x, rows.get(r, {})) for r, x in labels.items()}
        view = compare_view(records, column, baseline, labels, run_colours(selection),
                            run_checks_of(table))
        if any(node_count(r) > 1 for r in rows.values()):
            view = html.Div([view, html.P(WHOLE_RUNS, className="hint compare-nodes")])
        return ([{"label": column_title(c), "value": c} for c in columns], column,
                [{"label": labels[r], "value": r} for r in selection], baseline, view)
