"""Screen-resolution downsampling that never hides a peak.

A browser cannot show more points than the plot has pixels, so every trace is reduced on
the server to a point budget with MinMaxLTTB (tsdownsample), and the global minimum and
maximum of the visible window are always kept: a power spike or a memory peak must
survive any zoom level.
"""

from __future__ import annotations

import numpy as np
from tsdownsample import MinMaxLTTBDownsampler

#: points per trace: about two per horizontal pixel of a wide chart
DEFAULT_BUDGET = 1500
#: MinMaxLTTB needs at least 3 output points, plus the two extremes we add ourselves
MIN_BUDGET = 5

_DOWNSAMPLER = MinMaxLTTBDownsampler()


def visible_window(x: np.ndarray, lo: float | None, hi: float | None) -> slice:
    """The slice of sorted ``x`` inside [lo, hi], widened by one point on each side.

    The extra neighbours let the line run to the plot's edges instead of stopping at the
    first sample inside the window.
    """
    start = 0 if lo is None else max(int(np.searchsorted(x, lo, side="left")) - 1, 0)
    stop = len(x) if hi is None else min(int(np.searchsorted(x, hi, side="right")) + 1, len(x))
    return slice(start, max(start, stop))


def downsample(x: np.ndarray, y: np.ndarray, budget: int = DEFAULT_BUDGET
               ) -> tuple[np.ndarray, np.ndarray]:
    """Reduce (x, y) to at most ``budget`` points, keeping the shape, the minimum and the maximum.

    ``x`` must be sorted ascending and free of NaN; NaN in ``y`` is dropped first.
    """
    if budget < MIN_BUDGET:
        raise ValueError(f"downsample budget must be at least {MIN_BUDGET} points, got {budget}")
    if len(x) != len(y):
        raise ValueError(f"downsample: x has {len(x)} points but y has {len(y)}")
    finite = ~np.isnan(y)
    if not finite.all():
        x, y = x[finite], y[finite]
    if len(x) <= budget:
        return x, y
    x64 = np.ascontiguousarray(x, dtype=np.float64)
    y64 = np.ascontiguousarray(y, dtype=np.float64)
    picked = _DOWNSAMPLER.downsample(x64, y64, n_out=budget - 2)
    # picked is sorted and unique: add the extremes only where it lacks them (a union of
    # the two arrays cost as much as the downsampling itself)
    extremes = {int(np.argmin(y64)), int(np.argmax(y64))}
    absent = [i for i in extremes if not _holds(picked, i)]
    if absent:
        picked = np.sort(np.concatenate((picked, np.array(absent, dtype=picked.dtype))))
    return x[picked], y[picked]


def _holds(ordered: np.ndarray, value: int) -> bool:
    at = int(np.searchsorted(ordered, value))
    return at < len(ordered) and int(ordered[at]) == value


def rolling_mean(y: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` samples (the first samples average what exists so far)."""
    if window < 1:
        raise ValueError(f"smoothing window must be at least 1 sample, got {window}")
    if window == 1 or len(y) == 0:
        return y
    csum = np.concatenate(([0.0], np.cumsum(y, dtype=np.float64)))
    idx = np.arange(1, len(y) + 1)
    lower = np.maximum(idx - window, 0)
    return (csum[idx] - csum[lower]) / (idx - lower)
