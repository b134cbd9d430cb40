"""radtrack.analysis: read runs, series and telemetry back, summarise and compare them."""

from radtrack.analysis.data import (
    list_metrics,
    load_runs,
    load_series,
    read_telemetry,
    resolve_tracking_uri,
    telemetry_listeners,
)

__all__ = [
    "list_metrics",
    "load_runs",
    "load_series",
    "read_telemetry",
    "resolve_tracking_uri",
    "telemetry_listeners",
]
