"""A device's energy from a run's readings of it: its cumulative energy at any time
(:func:`cumulative_energy`: the energy counter's readings, shaped by the power readings
between two of them, a restarted listener's lives summed) and its joules per window
(:func:`gpu_window_energy`: the union of the co-located runs' readings of the device, each
over its own span). What co-location accounting splits (radtrack/compute/attribution.py)
and what code windows and the window table sum (radtrack/postrun/window_energy.py).

Pure: arrays in, joules out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from radtrack.compute import stats


class GpuUse(Protocol):
    """What is read of a run's use of a device (radtrack/compute/attribution.py ``GpuUse``):
    its span and its readings, quantity -> (unix s, values)."""

    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...

    @property
    def readings(self) -> Mapping[str, tuple[np.ndarray, np.ndarray]]: ...


def clean_series(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The finite readings of a series, in time order."""
    t, v = np.asarray(t, dtype=float), np.asarray(v, dtype=float)
    ok = np.isfinite(t) & np.isfinite(v)
    order = np.argsort(t[ok], kind="stable")
    return t[ok][order], v[ok][order]


def cumulative_energy(use: GpuUse, at: np.ndarray) -> np.ndarray:
    """The GPU's energy (J, from an arbitrary origin) at times ``at``; NaN outside the span
    the run's readings cover."""
    tp, p = clean_series(*use.readings.get("power_w", (np.array([]), np.array([]))))
    tc, c = clean_series(*use.readings.get("energy_j", (np.array([]), np.array([]))))
    # one counter over a restarted listener's lives, the gap between two bridged by the power
    c = stats.stitch_counter(c, tc, (tp, p) if len(tp) >= 2 else None)
    out = np.full(len(at), np.nan)
    q = None
    if len(tp) >= 2:
        q = np.concatenate(([0.0], np.cumsum(np.diff(tp) * (p[1:] + p[:-1]) / 2)))
    if len(tc) >= 2:
        inside = (at >= tc[0]) & (at <= tc[-1])
        k = np.clip(np.searchsorted(tc, at[inside], side="right") - 1, 0, len(tc) - 2)
        ta, tb = tc[k], tc[k + 1]
        frac = (at[inside] - ta) / (tb - ta)
        if q is not None:  # shape the interval by the power where the power covers it
            qa, qb, qx = (np.interp(x, tp, q) for x in (ta, tb, at[inside]))
            covered = (ta >= tp[0]) & (tb <= tp[-1]) & (qb > qa)
            frac = np.where(covered, (qx - qa) / np.where(covered, qb - qa, 1.0), frac)
        out[inside] = c[k] + frac * (c[k + 1] - c[k])
    elif q is not None:
        inside = (at >= tp[0]) & (at <= tp[-1])
        out[inside] = np.interp(at[inside], tp, q)
    return out


def gpu_window_energy(uses: Sequence[GpuUse], edges: np.ndarray) -> np.ndarray:
    """Joules per window of one GPU over the part of each window the readings cover: the
    union of the runs' readings of the device, each over its own span (a run's listeners
    stop at its end: its partners' readings cover the GPU after it). Where several runs'
    readings cover the same moment, the run of the longest span counts (they all read the
    same device). NaN where none does. A window the readings cover only in part (the first,
    a few ms before the listener's first reading) keeps the covered part."""
    covers = [(use, cover) for use in sorted(uses, key=lambda u: -(u.end - u.start))
              if (cover := _coverage(use)) is not None]
    out = np.full(len(edges) - 1, np.nan)
    if not covers:
        return out
    # the pieces between every window edge and every run's coverage bound, each measured by
    # the first run (longest span) whose readings cover it
    cuts = np.unique(np.concatenate([edges, [b for _, c in covers for b in c]]))
    cuts = cuts[(cuts >= edges[0]) & (cuts <= edges[-1])]
    piece = np.full(len(cuts) - 1, np.nan)
    for use, (lo, hi) in covers:
        todo = np.isnan(piece) & (cuts[:-1] >= lo) & (cuts[1:] <= hi)
        if todo.any():
            e = cumulative_energy(use, cuts)
            piece[todo] = np.maximum(np.diff(e)[todo], 0.0)
    window = np.clip(np.searchsorted(edges, cuts[:-1], side="right") - 1, 0, len(out) - 1)
    known = np.isfinite(piece)
    sums = np.bincount(window[known], weights=piece[known], minlength=len(out))
    touched = np.bincount(window[known], minlength=len(out)) > 0
    out[touched] = sums[touched]
    return out


def _coverage(use: GpuUse) -> tuple[float, float] | None:
    """The span over which the run's readings give the GPU's energy, inside the run's span."""
    for quantity in ("energy_j", "power_w"):
        t, _ = clean_series(*use.readings.get(quantity, (np.array([]), np.array([]))))
        if len(t) >= 2:
            lo, hi = max(float(t[0]), use.start), min(float(t[-1]), use.end)
            return (lo, hi) if hi > lo else None
    return None
