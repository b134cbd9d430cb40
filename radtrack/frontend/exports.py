"""Exports: chart images (PNG/JPG/SVG/PDF: image_export.py), series as CSV/JSON, views as JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from radtrack.analysis.plotting import CHROMIUM  # noqa: F401 (re-export)
from radtrack.csvsafe import safe_frame
from radtrack.frontend.data import Series
from radtrack.frontend.image_export import IMAGE_FORMATS, ExportError, render  # noqa: F401
from radtrack.frontend.nodes import split_lane
from radtrack.vocab.meaning import describe

#: run: the run's display name (its MLflow run name, as in the legend); node: the node the
#: sample is from (0..N-1 on a multi-node run, 0 on a one-node run; radtrack/frontend/nodes.py);
#: label, scope, unit: what the metric is, whose figure and in what unit
#: (radtrack/vocab/meaning.py: ``run CPU (% of one core)``, ``run``, ``%``); time: ISO 8601
#: UTC; seconds: since the run's start; unix_time: seconds since the epoch
SERIES_COLUMNS = ["run", "run_id", "node", "metric", "label", "scope", "unit", "time",
                  "seconds", "unix_time", "value"]


def series_frame(series: Mapping[tuple[str, str], Series], run_ids: Sequence[str],
                 metrics: Sequence[str], xmode: str = "seconds",
                 x_range: tuple[float, float] | None = None,
                 names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Full-resolution samples as :data:`SERIES_COLUMNS` (``names``: run id -> display name);
    ``run_ids`` may hold a multi-node run's lanes (nodes.py): a row per node's sample.

    ``x_range``, in the units of ``xmode`` (as the chart's zoom), keeps only the samples
    of the zoomed window.
    """
    parts = []
    for owner in run_ids:
        run_id, node = split_lane(owner)
        for metric in metrics:
            one = series.get((owner, metric))
            if one is None or not len(one):
                continue
            times, seconds, values = one.x("wall"), one.seconds, one.value
            if x_range is not None:
                x = one.x(xmode)
                inside = (x >= x_range[0]) & (x <= x_range[1])
                times, seconds, values = times[inside], seconds[inside], values[inside]
            # ISO 8601 to the millisecond (what the listeners' clocks resolve)
            stamps = pd.to_datetime(np.round(times * 1000.0).astype("int64"), unit="ms", utc=True)
            iso = stamps.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
            said = describe(metric)
            parts.append(pd.DataFrame({
                "run": (names or {}).get(run_id, run_id), "run_id": run_id, "node": node,
                "metric": metric,
                "label": said.label, "scope": said.scope, "unit": said.unit_text,
                "time": iso, "seconds": seconds, "unix_time": times, "value": values}))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("seconds", "unix_time", "value")
                                          else "int64" if c == "node" else str)
                             for c in SERIES_COLUMNS})
    return pd.concat(parts, ignore_index=True)[SERIES_COLUMNS]


def series_csv(frame: pd.DataFrame) -> str:
    buffer = io.StringIO()  # formula-like text cells neutralised (radtrack/csvsafe.py)
    safe_frame(frame).to_csv(buffer, index=False, float_format="%.6f")
    return buffer.getvalue()


def series_json(frame: pd.DataFrame) -> str:
    """A JSON list of {run, run_id, node, metric, label, scope, unit, time, seconds, unix_time,
    value} records (NaN as null)."""
    records = frame.replace({np.nan: None}).to_dict("records")
    return json.dumps(records)


def view_json(view: Mapping[str, object], runs: pd.DataFrame, tracking_uri: str) -> str:
    """The whole view: what is shown and how, plus who the runs are, for sharing or re-loading."""
    identity = [c for c in ("run_id", "run_name", "experiment", "workload", "letter", "status")
                if c in runs.columns]
    described = runs[identity].astype(object).where(runs[identity].notna(), None)
    return json.dumps({"tracking_uri": tracking_uri, "view": dict(view),
                       "runs": described.to_dict("records")}, indent=2, default=str)
