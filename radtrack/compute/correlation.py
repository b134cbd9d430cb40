"""Correlation of metrics on time-aligned series.

Listeners sample at their own instants, so series are first put on a common grid: each
run's seconds are cut into bins (1 s by default) and a metric's samples in a bin are
averaged. Pooling over runs stacks the binned rows of every run; the correlation is then
taken over bins where both metrics have a value (pairwise).
"""

from __future__ import annotations

import pandas as pd

METHODS = ("pearson", "spearman")  # radtrack/reader_args.py offers the same (a test checks)


def align(series: pd.DataFrame, metrics: list[str] | None = None,
          bin_s: float = 1.0) -> pd.DataFrame:
    """Wide frame: one row per (run_id, bin), one column per metric, bin means."""
    if bin_s <= 0:
        raise ValueError(f"correlation bin width must be positive, got {bin_s} s")
    if metrics is not None:
        missing = [m for m in metrics if m not in set(series["metric"])]
        if missing:
            raise ValueError(f"no samples of {', '.join(repr(m) for m in missing)} in the series")
        series = series[series["metric"].isin(metrics)]
    binned = series.assign(bin=(series["seconds"] // bin_s).astype("int64"))
    wide = binned.pivot_table(index=["run_id", "bin"], columns="metric", values="value",
                              aggfunc="mean")
    wide.columns.name = None
    return wide[metrics] if metrics is not None else wide


def correlate(series: pd.DataFrame, metrics: list[str] | None = None, bin_s: float = 1.0,
              method: str = "pearson", min_periods: int = 3) -> pd.DataFrame:
    """Correlation matrix (``pearson`` or ``spearman``) of ``metrics`` over the binned series
    of every run in ``series`` (one run: within that run; several: pooled)."""
    if method not in METHODS:
        raise ValueError(f"correlation method must be one of {', '.join(METHODS)}, not {method!r}")
    wide = align(series, metrics, bin_s)
    # A constant column has no defined correlation; keep it visible as NaN rather than drop it.
    return wide.corr(method=method, min_periods=min_periods)
