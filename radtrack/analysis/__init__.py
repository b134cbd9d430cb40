"""radtrack.analysis: read runs, series and telemetry back, summarise and compare them.

The names below load on first use (PEP 562): a module of this package imported for its
pure computation (the launcher's end: energy figures, attribution) does not pay for
analysis/data.py, which imports MLflow and pandas (about 2 CPU-s on a 2-core VM).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "align": "correlation", "correlate": "correlation",
    "list_metrics": "data", "load_run_records": "data", "load_runs": "data", "load_series": "data",
    "read_telemetry": "data", "resolve_tracking_uri": "data",
    "interference": "interference",
    "summarize_runs": "run_summaries",
    "coefficient_of_variation": "summary", "integrate_energy": "summary", "run_energy": "summary",
    "summarize_series": "summary", "time_weighted_mean": "summary", "windowed_mean": "summary",
    "telemetry_listeners": "trace_listing",
    "time_to_target": "variability", "variability": "variability",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
