"""What a chart plots (runs, metrics, options, uirevision) and the query that names it again.

The chart callback draws from :func:`chart_inputs` and puts :func:`chart_query` in the
figure under ``QUERY_KEY``; a zoom (zoom_data.py) and an export (callbacks_export.py) send
that query back and get the same inputs from :func:`chart_inputs`.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

from radtrack.frontend.attributed import DEFAULT_POWER, POWER_MODES
from radtrack.frontend.data import DataSource
from radtrack.frontend.figures import ChartOptions

#: the figure key under which draw_chart tells the browser what the chart shows
QUERY_KEY = "radtrack"


def chart_query(selection: list[str], metrics: list[str], xmode: str, smooth: object,
                logy: object, rev: str, power: str = DEFAULT_POWER,
                overlay: bool = False) -> dict[str, object]:
    """What the browser sends back with a zoom to get the same chart's arrays."""
    return {"runs": list(selection), "metrics": list(metrics), "xmode": xmode,
            "smooth": smooth, "logy": logy, "rev": rev, "power": power, "overlay": overlay}


def revision(selection: list[str], metrics: list[str], xmode: str, logy: bool,
             power: str = DEFAULT_POWER, overlay: bool = False) -> str:
    """Plotly's uirevision: zoom survives refreshes until what is plotted changes."""
    raw = json.dumps([sorted(selection), metrics, xmode, logy]
                     + ([power, overlay] if (power, overlay) != (DEFAULT_POWER, False) else []))
    return hashlib.sha1(raw.encode()).hexdigest()[:12]


def power_mode(value: object) -> str:
    """The power toggle's value, its default where a browser sends anything else."""
    return value if value in POWER_MODES else DEFAULT_POWER  # type: ignore[return-value]


def overlay_on(value: object) -> bool:
    """The overlay checklist's value (``["gpus"]``) or the query's boolean."""
    return value is True or (isinstance(value, list) and "gpus" in value)


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


def chart_inputs(source: DataSource, selection, chosen, xmode, smooth, logy, view_range,
                 power: object = DEFAULT_POWER, overlay: object = False
                 ) -> tuple[list[str], list[str], ChartOptions, str]:
    """What to plot: runs, the chosen metrics some run has, options, and the uirevision."""
    selection = list(selection or [])
    chosen = list(chosen or [])
    # No metric ticked (every picker step before the first): no run's keys are read.
    keys = set(source.metric_keys(selection)) if selection and chosen else set()
    metrics = [m for m in chosen if m in keys]
    logy_on = "log" in (logy or [])
    power_value, overlay_value = power_mode(power), overlay_on(overlay)
    rev = revision(selection, metrics, xmode, logy_on, power_value, overlay_value)
    x_range = None
    if isinstance(view_range, dict) and view_range.get("rev") == rev:
        x_range = parse_range(view_range.get("x"), xmode)
    try:
        smooth_n = max(1, min(int(smooth or 1), 10_000))
    except (TypeError, ValueError):
        smooth_n = 1
    return selection, metrics, ChartOptions(xmode, smooth_n, logy_on, x_range,
                                            power=power_value, overlay=overlay_value), rev


def link_range(source: DataSource, view) -> dict | None:
    """A view's zoom (``view.xrange``, wall clock in unix s) as the "view-range" store holds
    a zoom of the chart the view draws: what the chart, exports and live refreshes read."""
    if not view.xrange:
        return None
    *_, rev = chart_inputs(source, view.runs, view.metrics, view.xmode, view.smooth,
                           ["log"] if view.logy else [], None, view.power, view.overlay)
    x = [v * 1000.0 for v in view.xrange] if view.xmode == "wall" else list(view.xrange)
    return {"rev": rev, "x": x}


def view_xrange(view_range: object, rev: str, xmode: str) -> list[float] | None:
    """The zoom the page shows, for a link or a saved view: the "view-range" store's range
    when it belongs to the chart shown (``rev``), in the axis' units."""
    if not isinstance(view_range, dict) or view_range.get("rev") != rev:
        return None
    found = parse_range(view_range.get("x"), xmode)
    return [round(found[0], 6), round(found[1], 6)] if found and found[0] < found[1] else None
