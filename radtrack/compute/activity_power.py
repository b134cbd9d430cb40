"""Activity-based power model: a second energy figure where the energy counter aliases.

The H100's power sensor looks at part of the time (radtrack/compute/sensor_model.py), so
the energy counter's figure for a load that switches on and off near the sensor's period
depends on the phase it happened to see (issue 30: identical 8-s windows 284 to 450 W
apart). NVML GPM metrics (SM active, tensor active, DRAM active) are computed from
hardware counters between two reads and cover all of the time. This module fits

    power = intercept + sum_k slope_k x activity_k        (activity in %)

on *steady* stretches of the same run (power samples steady, activity either idle or
continuous, where the sensor's partial view cannot alias), else uses the calibration
given (a calibration run's fit, or the documented H100 constants), and optionally scales
it to the energy counter over a long span (``scale``: counter / model over at least
:data:`LONG_SPAN_S`, where the counter's phase errors average out). The model's energy
over any window is then the integral of the predicted power over the GPM intervals.

It is an estimate next to the counter's figure, never a replacement: stored as
``summary/energy_model/<scope>/activity_energy_j`` (radtrack/vocab/schema.py).

Pure numpy/pandas, no radtrack imports (benchmarks/power_sensor.py loads it by path on a
GPU host without MLflow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

# preferred first: the engine's busy time maps one to one onto a duty cycle; the others are
# added only where the steady stretches tell them apart (they move together in most loads)
FEATURES = ("gr_engine_active_pct", "sm_active_pct", "tensor_active_pct", "dram_active_pct")
MIN_GAIN = 0.2  # a further feature must cut the residual sum of squares by this fraction
LONG_SPAN_S = 60.0  # the counter is trusted for scaling only over at least this long
STEADY_CV = 0.03  # power samples within a steady interval: coefficient of variation below this
IDLE_PCT = 5.0  # activity at or below: idle (nothing to alias)
BUSY_PCT = 85.0  # SM activity at or above: continuous work (nothing to alias)
# H100 80GB HBM3, driver 580.159.04 (issue 30): idle 118.7 W, bf16 matmul loop 691.3 W at
# SM active ~100 %; used only when a run has no steady stretch at two activity levels
H100_DEFAULT = {"intercept_w": 118.7, "slopes_w": {"gr_engine_active_pct": 5.726}}


@dataclass(frozen=True)
class PowerModel:
    intercept_w: float
    slopes_w: Mapping[str, float]  # W per percentage point of each activity
    fitted_on: str  # "steady stretches of this run" | "calibration" | "H100 defaults"
    scale: float = 1.0  # counter energy / model energy over a long span (1: unscaled)
    points: int = 0  # steady intervals used by the fit
    notes: list[str] = field(default_factory=list)

    def predict(self, activity: Mapping[str, np.ndarray]) -> np.ndarray:
        """Power (W) for each set of activity readings (arrays of equal length)."""
        n = len(next(iter(activity.values()))) if activity else 0
        out = np.full(n, self.intercept_w, dtype=float)
        for name, slope in self.slopes_w.items():
            out += slope * np.asarray(activity[name], dtype=float)
        return out * self.scale

    def features(self) -> list[str]:
        return list(self.slopes_w)


@dataclass
class ActivityTrace:
    """GPM readings: each value covers (t[i-1], t[i]] (the time since the previous read)."""

    t: np.ndarray
    values: dict[str, np.ndarray]

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.t[:-1], self.t[1:]

    def at(self, k: slice | np.ndarray) -> dict[str, np.ndarray]:
        return {name: v[1:][k] for name, v in self.values.items()}


def steady_intervals(activity: ActivityTrace, sample_t: np.ndarray, sample_w: np.ndarray,
                     max_cv: float = STEADY_CV) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the GPM intervals fit to learn from, mean sampled power of every interval).

    An interval is kept when it holds at least 3 power samples with a coefficient of
    variation under ``max_cv``, the activity did not change from the interval before, and
    the SM activity is idle (<= IDLE_PCT) or continuous (>= BUSY_PCT): a partly active
    interval may be a load switching faster than the sensor sees, whose samples can look
    steady and still be wrong."""
    lo, hi = activity.intervals()
    first = np.searchsorted(sample_t, lo, side="right")
    last = np.searchsorted(sample_t, hi, side="right")
    mean_w = np.full(len(lo), np.nan)
    keep = []
    sm = activity.values.get(next((f for f in FEATURES if f in activity.values), ""))
    for k, (i, j) in enumerate(zip(first, last, strict=True)):
        if j - i < 3:
            continue
        w = sample_w[i:j]
        mean_w[k] = float(np.mean(w))
        if np.std(w) > max_cv * max(mean_w[k], 1e-9):
            continue
        if sm is not None:
            now, before = sm[k + 1], sm[k]
            if not (now <= IDLE_PCT or now >= BUSY_PCT) or abs(now - before) > 5.0:
                continue
        keep.append(k)
    return np.asarray(keep, dtype=int), mean_w


def fit(activity: ActivityTrace, sample_t: np.ndarray, sample_w: np.ndarray,
        fallback: PowerModel | None = None, min_span_pct: float = 30.0) -> PowerModel | None:
    """Least-squares fit on the steady intervals; features with a negative slope (collinear
    with another) are dropped. ``fallback`` (a calibration) when the steady intervals do
    not span ``min_span_pct`` of SM activity; None when there is neither."""
    features = [f for f in FEATURES if f in activity.values]
    if not features:
        return None
    keep, mean_w = steady_intervals(activity, sample_t, sample_w)
    acts = activity.at(keep)
    span = np.ptp(acts[features[0]]) if len(keep) else 0.0
    if len(keep) < 4 or span < min_span_pct:
        if fallback is None:
            return None
        note = f"{len(keep)} steady interval(s) spanning {span:.0f} % activity: calibration used"
        return replace(fallback, notes=[*fallback.notes, note])
    y = mean_w[keep]
    chosen: list[str] = []
    best: tuple[np.ndarray, float] | None = None
    for f in features:  # forward selection in order of preference
        trial = [*chosen, f]
        x = np.column_stack([np.ones(len(keep))] + [acts[g] for g in trial])
        if np.linalg.cond(x) > 1e4:
            continue  # collinear with what is in already: the steady stretches cannot tell
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        rss = float(np.sum((x @ coef - y) ** 2))
        if np.any(coef[1:] < 0) or (best is not None and rss > (1 - MIN_GAIN) * best[1]):
            continue
        chosen, best = trial, (coef, rss)
    if best is None:
        return fallback
    coef = best[0]
    return PowerModel(float(coef[0]), dict(zip(chosen, map(float, coef[1:]), strict=True)),
                      "steady stretches of this run", points=len(keep))


def default_model() -> PowerModel:
    return PowerModel(H100_DEFAULT["intercept_w"], dict(H100_DEFAULT["slopes_w"]), "H100 defaults")


def energy_between(model: PowerModel, activity: ActivityTrace, a: float, b: float) -> float:
    """The model's energy (J) over [a, b]: predicted power x the part of each GPM interval
    inside it. NaN where the GPM readings do not cover [a, b]."""
    lo, hi = activity.intervals()
    if not len(lo) or a < lo[0] - 1e-9 or b > hi[-1] + 1e-9:
        return float("nan")
    overlap = np.clip(np.minimum(hi, b) - np.maximum(lo, a), 0.0, None)
    power = model.predict({f: activity.values[f][1:] for f in model.features()})
    return float(np.sum(power * overlap))


def scaled(model: PowerModel, counter_j: float, a: float, b: float,
           activity: ActivityTrace, min_span_s: float = LONG_SPAN_S) -> PowerModel:
    """``model`` scaled to the counter's energy over [a, b] when that span is long enough
    for the counter's phase errors to average out; unchanged (with a note) otherwise."""
    if b - a < min_span_s:
        return replace(model, notes=[*model.notes, f"not scaled: span {b - a:.0f} s < {min_span_s:.0f} s"])
    own = energy_between(replace(model, scale=1.0), activity, a, b)
    if not (own > 0 and counter_j > 0):
        return model
    return replace(model, scale=counter_j / own)


def activity_trace(t: Sequence[float], columns: Mapping[str, Sequence[float]]) -> ActivityTrace:
    """An :class:`ActivityTrace` from a time column and activity columns; readings missing
    any feature are dropped."""
    t = np.asarray(t, dtype=float)
    vals = {k: np.asarray(v, dtype=float) for k, v in columns.items() if k in FEATURES}
    ok = np.isfinite(t)
    for v in vals.values():
        ok &= np.isfinite(v)
    order = np.argsort(t[ok], kind="stable")
    return ActivityTrace(t[ok][order], {k: v[ok][order] for k, v in vals.items()})
