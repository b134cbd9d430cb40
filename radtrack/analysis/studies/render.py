"""``radtrack report EXPERIMENT --study NAME``: a study's tables as text, files and one chart.

The chart goes through the image export the Dash page uses too (radtrack/analysis/plotting.py:
Plotly figure -> headless Chromium via kaleido), so it looks like the page's; its
format follows the ``--chart`` suffix: .png, .svg or .pdf.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from radtrack.analysis.studies import StudyResult, run_study
from radtrack.analysis.text_table import render
from radtrack.errors import RadtrackError

PRINTED_ROWS = 30
Emit = Callable[[dict[str, pd.DataFrame], str, str, argparse.Namespace], None]


def render_study(result: StudyResult) -> str:
    parts = [f"experiment {result.experiment}: study {result.study}"]
    for note in result.notes:
        parts.append(f"note: {note}")
    for name, frame in result.tables.items():
        view = frame.drop(columns=[c for c in ("run_id",) if c in frame.columns])
        parts += ["", result.titles.get(name, name)]
        if len(view) > PRINTED_ROWS:  # a series: the files carry every row
            parts += [render(view.head(PRINTED_ROWS)),
                      f"... {len(view)} rows in all; --out writes every one"]
        else:
            parts.append(render(view))
    return "\n".join(parts)


def emit_study(args: argparse.Namespace, uri: str, emit: Emit) -> None:
    """Print (and with --out write) the study's tables; with --chart, write its chart."""
    result = run_study(args.study, args.experiment, args.workload, uri, args.target)
    emit(result.tables, result.main, render_study(result), args)
    chart = getattr(args, "chart", None)
    if chart is not None:
        write_chart(result, chart)
        print(f"wrote {chart}")


def write_chart(result: StudyResult, path: Path) -> None:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise RadtrackError(f"--chart {path}: the suffix must be .png, .svg or .pdf")
    try:
        from radtrack.analysis.plotting import figure_image
    except ImportError as exc:
        raise RadtrackError(f"--chart needs the image export ({exc}); "
                            "pip install 'radtrack[export]'") from None
    fig = study_figure(result)
    try:
        data = figure_image(fig, fmt)
    except Exception as exc:  # kaleido raises its own types when no browser can start
        raise RadtrackError(f"--chart {path}: rendering failed ({type(exc).__name__}: {exc}); "
                            "it needs kaleido and a Chromium (BROWSER_PATH)") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def study_figure(result: StudyResult):  # -> plotly.graph_objects.Figure
    """One chart per study: what its main finding looks like."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    title = f"{result.study}: {result.experiment}"
    if result.study == "power-variation":
        table = result.tables["configurations"]
        labels = [f"{c} (w{w})" for c, w in zip(table["configuration"], table["workload"], strict=True)]
        fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                            subplot_titles=("power W (mean, p5-p95)", "SM clock MHz",
                                            "GPU temperature C"))
        for i, signal in enumerate(("power_w", "sm_clock_mhz", "temp_c"), start=1):
            mean = table[f"{signal}_mean"]
            fig.add_trace(go.Bar(x=labels, y=mean, name=signal, showlegend=False, error_y={
                "type": "data", "symmetric": False, "array": table[f"{signal}_p95"] - mean,
                "arrayminus": mean - table[f"{signal}_p5"]}), row=i, col=1)
        fig.update_layout(height=900)
    elif result.study == "multi-level-utilisation":
        from radtrack.analysis.studies.utilisation import LEVELS

        table = result.tables["levels"]
        labels = [f"{s} {d}" for s, d in zip(table["script"], table["dtype"], strict=True)]
        fig = go.Figure([go.Bar(x=labels, y=table[level], name=level) for level in LEVELS])
        fig.update_layout(barmode="group", yaxis_title="% (steady-state mean)", height=550)
    elif result.study == "time-to-accuracy":
        series = result.tables["utilisation"]
        fig = go.Figure([go.Scatter(x=series["seconds"], y=series[c], mode="lines", name=str(c))
                         for c in series.columns if c != "seconds"])
        fig.update_layout(xaxis_title="seconds since run start",
                          yaxis_title="GPU utilisation % (1-s mean)", height=500)
    elif result.study == "attribution":
        table = result.tables["runs"]
        change = table["energy_per_unit_change_pct"].astype(float)
        fig = go.Figure([go.Bar(x=table["run_name"], y=change, name="J/unit vs solo", error_y={
            "type": "data", "symmetric": False,
            "array": table["energy_per_unit_change_pct_hi"].astype(float) - change,
            "arrayminus": change - table["energy_per_unit_change_pct_lo"].astype(float)})])
        fig.update_layout(yaxis_title="attributed J/unit vs solo (%)", height=500)
    else:
        from radtrack.analysis.plotting import correlation_figure

        corr = result.tables["correlations"]
        pooled = corr[corr["script"] == "pooled"] if (corr["script"] == "pooled").any() else corr
        matrix = pooled.pivot_table(index="gpu_metric", columns="cpu_metric", values="r")
        fig = correlation_figure(matrix, title)
    fig.update_layout(title=title, template="plotly_white")
    return fig
