"""radtrack.analysis: read runs, series and telemetry back, summarise and compare them.

The names below load on first use (PEP 562): a module of this package imported for its
pure computation (the launcher's end: energy figures, attribution) does not pay for
analysis/data.py, which imports MLflow and pandas (about 2 CPU-s on a 2-core VM).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {  # name -> its module (radtrack.compute: pure computation, the floor below)
    "align": "radtrack.compute.correlation", "correlate": "radtrack.compute.correlation",
    "list_metrics": ".data", "load_run_records": ".data", "load_runs": ".data",
    "load_series": ".data", "read_telemetry": ".data", "resolve_tracking_uri": ".data",
    "interference": "radtrack.compute.interference",
    "summarize_runs": ".run_summaries",
    "coefficient_of_variation": "radtrack.compute.summary",
    "integrate_energy": "radtrack.compute.summary", "run_energy": "radtrack.compute.summary",
    "summarize_series": "radtrack.compute.summary",
    "time_weighted_mean": "radtrack.compute.summary", "windowed_mean": "radtrack.compute.summary",
    "telemetry_listeners": ".trace_listing",
    "time_to_target": "radtrack.compute.variability", "variability": "radtrack.compute.variability",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
