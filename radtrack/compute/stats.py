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


Power = tuple[np.ndarray, np.ndarray]  # (times s, watts): what bridges a counter's gap


def counter_delta(v: np.ndarray, t: np.ndarray | None = None, power: Power | None = None) -> float:
    """Increase of a cumulative counter (energy_j) over the series (readings in time order);
    NaN under two readings. A reading below the one before starts a new life of the counter
    (a restarted listener counts from 0 again, a driver reload resets it): the increase is
    the sum over its lives (:func:`counter_lives`), never the last reading minus the first."""
    return counter_lives(v, t, power)[0]


def counter_lives(v: np.ndarray, t: np.ndarray | None = None,
                  power: Power | None = None) -> tuple[float, int]:
    """(increase, lives) of a cumulative counter: over :func:`stitch_counter`'s one counter,
    its last reading minus its first; NaN under two readings."""
    v = np.asarray(v, dtype=float)
    ok = ~np.isnan(v)
    if ok.sum() < 2:
        return float("nan"), int(ok.sum())
    x = v[ok]
    whole = stitch_counter(x, None if t is None else np.asarray(t, dtype=float)[ok], power)
    return float(whole[-1] - whole[0]), 1 + len(_new_lives(x))


def _new_lives(x: np.ndarray) -> list[int]:
    """Where a counter's readings ``x`` start a new life: a reading below the one before by
    more than float noise (a last digit lost on the way is no restart)."""
    tol = 1e-9 * np.maximum(1.0, np.abs(x[:-1]))
    return [int(i) + 1 for i in np.flatnonzero(np.diff(x) < -tol)]


BRIDGE_S = 1.0  # the power either side of a gap between two lives: over this much of each


def _rate(x: np.ndarray, t: np.ndarray, first: int, last: int, back: bool) -> float:
    """A life's mean power (counter units per s) over its readings ``first``..``last`` within
    BRIDGE_S of its end next to the gap (``back``: its last reading), at least one interval;
    NaN with a single reading."""
    if last <= first:
        return float("nan")
    if back:
        j = max(first, min(last - 1, int(np.searchsorted(t, t[last] - BRIDGE_S))))
        a, b = j, last
    else:
        j = min(last, max(first + 1, int(np.searchsorted(t, t[first] + BRIDGE_S, side="right")) - 1))
        a, b = first, j
    return float((x[b] - x[a]) / (t[b] - t[a])) if t[b] > t[a] else float("nan")


def power_between(power: Power, a: float, b: float, inside_only: bool = False) -> float:
    """The trapezoid integral of ``power`` over ``a``..``b`` (its value interpolated at
    both ends); NaN where its readings do not cover the span (none inside it, nor on both
    sides of it; with ``inside_only``, none inside it: a span its readings only border is
    not bridged from the two single readings next to it)."""
    tp, w = (np.asarray(x, dtype=float) for x in power)
    ok = np.isfinite(tp) & np.isfinite(w)
    tp, w = tp[ok], w[ok]
    order = np.argsort(tp, kind="stable")
    tp, w = tp[order], w[order]
    inside = (tp > a) & (tp < b)
    if not len(tp) or not (inside.any() or (not inside_only and tp[0] <= a and tp[-1] >= b)):
        return float("nan")
    xs = np.concatenate(([a], tp[inside], [b]))
    return float(np.trapezoid(np.interp(xs, tp, w), xs))


def stitch_counter(v: np.ndarray, t: np.ndarray | None = None,
                   power: Power | None = None) -> np.ndarray:
    """A cumulative counter's readings (in time order; NaN where none) as one counter over
    its lives: a reading below the one before starts a new life (a restarted listener counts
    from 0 again, a driver reload resets the counter), which is raised to go on from the
    previous life's last reading plus the gap between the two, unmeasured by either (with
    the readings' times ``t``, in s; without them the gap counts 0), bridged by the
    device's ``power`` readings over it where some lie inside it (a counter read every 30 s
    leaves long gaps a power sensor fills), else at the mean power of the lives either side
    of it over BRIDGE_S. Each life's
    own increases are kept as read."""
    out = np.asarray(v, dtype=float).copy()
    idx = np.flatnonzero(~np.isnan(out))
    x = out[idx]
    starts = _new_lives(x)
    if not starts:
        return out
    tt = None if t is None else np.asarray(t, dtype=float)[idx]
    whole = x.copy()
    for k, a in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(x)
        bridge = 0.0
        if tt is not None:
            # power read inside the gap (a sensor that lived through it); the dead listener's
            # own readings only border it, and one of them stretched over the gap is its noise
            bridge = (power_between(power, float(tt[a - 1]), float(tt[a]), inside_only=True)
                      if power is not None else float("nan"))
            if bridge != bridge:  # no power reading inside the gap: the lives' own rates
                life_before = max((b for b in [0, *starts] if b < a), default=0)
                rates = [r for r in (_rate(x, tt, life_before, a - 1, back=True),
                                     _rate(x, tt, a, e - 1, back=False)) if r == r]
                bridge = float(np.mean(rates)) * float(tt[a] - tt[a - 1]) if rates else 0.0
        whole[a:e] = x[a:e] - x[a] + whole[a - 1] + bridge
    out[idx] = whole
    return out
