"""Time-weighted statistics of sampled series (shared by the sink's summaries and analysis)."""

from __future__ import annotations

import numpy as np


def time_weighted_mean(t: np.ndarray, v: np.ndarray) -> float:
    """Mean of a piecewise-linear signal sampled at times ``t`` (trapezoid rule).

    Uneven sampling does not bias it the way a plain average would. One sample: that value.
    """
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    ok = ~np.isnan(v)
    t, v = t[ok], v[ok]
    if len(v) == 0:
        return float("nan")
    if len(v) == 1 or t[-1] <= t[0]:
        return float(v.mean())
    return float(np.trapezoid(v, t) / (t[-1] - t[0]))


def integrate(t: np.ndarray, v: np.ndarray) -> float:
    """Integral of ``v`` over ``t`` (trapezoid), e.g. watts over seconds -> joules."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    ok = ~np.isnan(v)
    if ok.sum() < 2:
        return float("nan")  # no interval to integrate over: unknown, not 0
    return float(np.trapezoid(v[ok], t[ok]))


def counter_delta(v: np.ndarray) -> float:
    """Increase of a cumulative counter (energy_j) over the series; NaN under two readings."""
    v = np.asarray(v, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return float("nan")
    return float(v[-1] - v[0])
