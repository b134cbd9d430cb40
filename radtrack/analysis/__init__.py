"""radtrack.analysis: read runs, series and telemetry back, summarise and compare them."""

from radtrack.analysis.correlation import align, correlate
from radtrack.analysis.data import (
    list_metrics,
    load_run_records,
    load_runs,
    load_series,
    read_telemetry,
    resolve_tracking_uri,
)
from radtrack.analysis.interference import interference
from radtrack.analysis.run_summaries import summarize_runs
from radtrack.analysis.summary import (
    coefficient_of_variation,
    integrate_energy,
    run_energy,
    summarize_series,
    time_weighted_mean,
    windowed_mean,
)
from radtrack.analysis.trace_listing import telemetry_listeners
from radtrack.analysis.variability import time_to_target, variability

__all__ = [
    "align",
    "coefficient_of_variation",
    "correlate",
    "integrate_energy",
    "interference",
    "list_metrics",
    "load_run_records",
    "load_runs",
    "load_series",
    "read_telemetry",
    "resolve_tracking_uri",
    "run_energy",
    "summarize_runs",
    "summarize_series",
    "telemetry_listeners",
    "time_to_target",
    "time_weighted_mean",
    "variability",
    "windowed_mean",
]
