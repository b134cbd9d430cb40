"""Plotly figures and image export shared by the studies' charts and the Dash page."""

from __future__ import annotations

import copy
import functools
import os
import threading

import numpy as np
import pandas as pd
import plotly.graph_objects as go

IMAGE_FORMATS = ("png", "svg", "pdf")
CHROMIUM = "/usr/bin/chromium"

_kaleido_lock = threading.Lock()
_kaleido_started = False


def _start_kaleido() -> None:
    """Start kaleido's browser once per process; later exports reuse it (about 3 s saved each)."""
    global _kaleido_started
    with _kaleido_lock:
        if _kaleido_started:
            return
        if "BROWSER_PATH" not in os.environ and os.path.exists(CHROMIUM):
            os.environ["BROWSER_PATH"] = CHROMIUM
        import kaleido

        # mathjax=False: its default is a CDN script, and the page must work offline.
        kaleido.start_sync_server(mathjax=False, silence_warnings=True)
        _kaleido_started = True


def figure_image(fig: go.Figure | dict, fmt: str, width: int = 1200, scale: float = 1.0) -> bytes:
    """The figure rendered by headless Chromium as ``png``, ``svg`` or ``pdf`` bytes."""
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"image format {fmt!r} is not one of {', '.join(IMAGE_FORMATS)}")
    _start_kaleido()
    import kaleido

    spec = fig if isinstance(fig, dict) else fig.to_plotly_json()
    height = int(spec.get("layout", {}).get("height") or 500)
    return kaleido.calc_fig_sync(spec, opts={"format": fmt, "width": width, "height": height,
                                             "scale": scale})


def empty_figure(message: str) -> dict:
    """A blank chart that says ``message``, as a plain figure dict."""
    return copy.deepcopy(_empty_figure(message))


@functools.lru_cache(maxsize=32)
def _empty_figure(message: str) -> dict:
    # plotly.py's validating Figure costs ~60 ms per blank chart, and the page's layout has
    # three of them: built once per message.
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, font={"size": 15, "color": "#666"},
                       xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=260, template="plotly_white", margin={"l": 20, "r": 20, "t": 20, "b": 20})
    return fig.to_plotly_json()


def correlation_figure(matrix: pd.DataFrame, title: str) -> go.Figure | dict:
    """A diverging heatmap of a square correlation matrix (-1 .. 1)."""
    if matrix.empty:
        return empty_figure("Pick at least two metrics with overlapping samples")
    labels = [str(c) for c in matrix.columns]
    fig = go.Figure(go.Heatmap(
        z=matrix.to_numpy(dtype=float), x=labels, y=[str(i) for i in matrix.index],
        zmin=-1, zmax=1, colorscale="RdBu", reversescale=True,
        text=np.round(matrix.to_numpy(dtype=float), 2), texttemplate="%{text}",
        hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>",
    ))
    side = max(320, 60 * len(labels) + 200)
    fig.update_layout(title=title, height=side, template="plotly_white",
                      margin={"l": 20, "r": 20, "t": 50, "b": 20}, yaxis={"autorange": "reversed"})
    return fig
