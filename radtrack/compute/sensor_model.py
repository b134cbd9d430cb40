"""A model of the GPU's power sensor, for synthetic traces (tests, the sensor benchmark).

The model follows what Yang et al. measured on A100 and H100 ("Part-time Power
Measurements: nvidia-smi's Lack of Attention", SC24, arXiv:2312.02741) and what
benchmarks/power_sensor.py measures:

- the sensor publishes a new reading every ``update_s`` seconds (at ``phase_s`` + k x
  ``update_s``); each reading is the mean of the true power over only the last
  ``avg_window_s`` seconds before it (the "part-time" window: 25 ms of every 100 ms in
  Yang et al.), plus Gaussian noise of ``noise_w``;
- the energy counter (nvmlDeviceGetTotalEnergyConsumption) adds reading x ``update_s`` at
  each update, so between updates it stands still and it integrates the readings, not
  the power;
- the driver's power samples (nvmlDeviceGetSamples) are taken every ``sample_s`` and each
  holds the newest reading.

With ``avg_window_s == update_s`` the sensor sees all of the time and the counter is exact
up to the update quantisation; with a shorter window a load whose period is near the
update period (or a divisor of it) is seen at nearly the same phase at every update, and
the counter's energy over a window depends on that phase, not on the work.

Pure numpy; no radtrack imports (the sensor benchmark loads this file on a GPU host
without MLflow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SensorModel:
    update_s: float = 0.1
    avg_window_s: float = 0.025
    sample_s: float = 0.02
    noise_w: float = 0.0
    phase_s: float = 0.0


@dataclass
class SensedTrace:
    """What the model sensor reports for a true power signal."""

    update_t: np.ndarray  # update times (s)
    readings_w: np.ndarray  # the reading published at each update
    counter_j: np.ndarray  # the energy counter right after each update
    sample_t: np.ndarray  # driver sample times (s)
    samples_w: np.ndarray  # driver samples


def square_wave(t: np.ndarray, period_s: float, duty: float, idle_w: float, busy_w: float,
                rise_s: float = 0.0, fall_s: float = 0.0, phase_s: float = 0.0) -> np.ndarray:
    """True power of a duty-cycled load: ``busy_w`` for ``duty`` of each period, else
    ``idle_w``; with ``rise_s``/``fall_s`` > 0 the power follows first-order ramps with
    those time constants (fast rise, slower fall on real GPUs) instead of jumping."""
    on = ((t - phase_s) % period_s) < duty * period_s
    target = np.where(on, busy_w, idle_w).astype(float)
    if rise_s <= 0 and fall_s <= 0 or len(t) < 2:
        return target
    out = np.empty_like(target)
    level = target[0]
    dt = np.diff(t, prepend=t[0])
    for i, (goal, step) in enumerate(zip(target, dt, strict=True)):
        tau = rise_s if goal > level else fall_s
        level = goal if tau <= 0 else goal + (level - goal) * np.exp(-step / tau)
        out[i] = level
    return out


def sense(t: np.ndarray, power_w: np.ndarray, model: SensorModel, seed: int = 0) -> SensedTrace:
    """The model sensor's view of ``power_w`` sampled on the even grid ``t``."""
    rng = np.random.default_rng(seed)
    dt = float(t[1] - t[0])
    cum = np.concatenate(([0.0], np.cumsum(power_w) * dt))  # energy at t[0] + k dt
    grid = t[0] + np.arange(len(cum)) * dt

    def energy_at(x: np.ndarray) -> np.ndarray:
        return np.interp(x, grid, cum)

    first = t[0] + model.avg_window_s + (model.phase_s % model.update_s)
    update_t = np.arange(first, t[-1], model.update_s)
    readings = (energy_at(update_t) - energy_at(update_t - model.avg_window_s)) / model.avg_window_s
    if model.noise_w > 0:
        readings = readings + rng.normal(0.0, model.noise_w, len(readings))
    counter = np.cumsum(readings * model.update_s)
    sample_t = np.arange(update_t[0], t[-1], model.sample_s) if len(update_t) else np.array([])
    idx = np.searchsorted(update_t, sample_t, side="right") - 1
    samples = readings[np.clip(idx, 0, None)] if len(readings) else np.array([])
    return SensedTrace(update_t, readings, counter, sample_t, samples)


def counter_between(trace: SensedTrace, a: float, b: float) -> float:
    """The counter's energy over [a, b] as a tracker reads it: the value standing at b
    minus the value standing at a (updates only; no interpolation)."""
    before = np.searchsorted(trace.update_t, [a, b], side="right") - 1
    vals = [trace.counter_j[i] if i >= 0 else 0.0 for i in before]
    return float(vals[1] - vals[0])
