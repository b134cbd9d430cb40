"""What a chart plots (runs, metrics, options, uirevision) and the query that names it again.

The chart callback draws from :func:`chart_inputs` and puts :func:`chart_query` in the
figure under ``QUERY_KEY``; a zoom (zoom_data.py) and an export (callbacks_export.py) send
that query back and get the same inputs from :func:`chart_inputs`.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

from radtrack.frontend.data import DataSource
from radtrack.frontend.figures import ChartOptions

#: the figure key under which draw_chart tells the browser what the chart shows
QUERY_KEY = "radtrack"


def chart_query(selection: list[str], metrics: list[str], xmode: str, smooth: object,
                logy: object, rev: str) -> dict[str, object]:
    """What the browser sends back with a zoom to get the same chart's arrays."""
    return {"runs": list(selection), "metrics": list(metrics), "xmode": xmode,
            "smooth": smooth, "logy": logy, "rev": rev}


def revision(selection: list[str], metrics: list[str], xmode: str, logy: bool) -> str:
    """Plotly's uirevision: zoom survives refreshes until what is plotted changes."""
    raw = json.dumps([sorted(selection), metrics, xmode, logy])
    return hashlib.sha1(raw.encode()).hexdigest()[:12]


def parse_range(raw: object, xmode: str) -> tuple[float, float] | None:
    """A relayout x range in the units the chart works in (wall clock: unix seconds)."""
    if not isinstance(raw, list | tuple) or len(raw) != 2 or None in raw:
        return None
    if xmode == "wall":
        # Plotly reports date ranges as naive strings in the axis' time zone, which is UTC here.
        values = [pd.Timestamp(v, unit="ms", tz="UTC") if isinstance(v, int | float)
                  else pd.Timestamp(v).tz_localize("UTC") for v in raw]
        lo, hi = (v.timestamp() for v in values)
    else:
        lo, hi = float(raw[0]), float(raw[1])
    return (min(lo, hi), max(lo, hi))


def chart_inputs(source: DataSource, selection, chosen, xmode, smooth, logy, view_range
                 ) -> tuple[list[str], list[str], ChartOptions, str]:
    """What to plot: runs, the chosen metrics some run has, options, and the uirevision."""
    selection = list(selection or [])
    chosen = list(chosen or [])
    # No metric ticked (every picker step before the first): no run's keys are read.
    keys = set(source.metric_keys(selection)) if selection and chosen else set()
    metrics = [m for m in chosen if m in keys]
    logy_on = "log" in (logy or [])
    rev = revision(selection, metrics, xmode, logy_on)
    x_range = None
    if isinstance(view_range, dict) and view_range.get("rev") == rev:
        x_range = parse_range(view_range.get("x"), xmode)
    try:
        smooth_n = max(1, min(int(smooth or 1), 10_000))
    except (TypeError, ValueError):
        smooth_n = 1
    return selection, metrics, ChartOptions(xmode, smooth_n, logy_on, x_range), rev
