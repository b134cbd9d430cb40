"""Error bars and the activity model's second figure for a run's energy, from its traces.

Pure computation over the listeners' wide frames (``time``, ``step``, one column per key,
as radtrack/store/traces.py stores them): per GPU scope with an energy counter
(``smi/<scope>/energy_j``),

- the counter's 95 % interval over the run or any window of it
  (radtrack/analysis/energy_error.py), from the driver's power samples
  (``power_sample_w``, else the polled ``power_w``) and the GPU's busy time (GPM's
  ``dcgm/<scope>/gr_engine_active_pct`` where the dcgm listener ran, else NVML's
  ``smi/<scope>/gpu_util_pct``);
- where GPM activity was recorded, the activity model's energy
  (radtrack/analysis/activity_power.py: fitted on the run's steady stretches, scaled to the
  counter over the run when the run is at least ``LONG_SPAN_S`` long; the code windows use
  the same model), stored next to the counter's under its own name; without GPM, or without
  steady stretches at two activity levels, there is none (the counter and its interval
  stand alone).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from radtrack.analysis import activity_power as ap
from radtrack.analysis.energy_error import (
    TOO_SHORT,
    EnergyInterval,
    SensorConstants,
    interval,
    load_constants,
)
from radtrack.store import schema

_COUNTER = re.compile(r"smi/(?P<scope>gpu\d+)/energy_j")


def _series(frame: pd.DataFrame | None, key: str) -> tuple[np.ndarray, np.ndarray]:
    if frame is None or key not in frame.columns:
        return np.array([]), np.array([])
    part = frame[["time", key]].dropna().sort_values("time")
    return part["time"].to_numpy(dtype=float), part[key].to_numpy(dtype=float)


def flag_code(ci: EnergyInterval) -> float:
    """The ``<key>_ci95_flag`` value of an interval (schema.CI95_FLAGS)."""
    if not ci.reason:
        return 0.0
    return 2.0 if ci.reason.startswith(TOO_SHORT) else 1.0


@dataclass
class GpuEnergy:
    """One GPU's readings, and its activity model once fitted."""

    scope: str
    counter: tuple[np.ndarray, np.ndarray]
    power: tuple[np.ndarray, np.ndarray]
    busy: tuple[np.ndarray, np.ndarray]  # activity readings, % of the time the GPU was busy
    activity: ap.ActivityTrace | None
    model: ap.PowerModel | None = None

    def interval(self, a: float, b: float, constants: SensorConstants) -> EnergyInterval:
        """The counter's 95 % interval over [a, b]."""
        tp, p = self.power
        tb, u = self.busy
        swing = sum(self.model.slopes_w.values()) * 100 if self.model is not None else None
        busy = u[(tb > a) & (tb <= b)] if len(tb) else None
        return interval(b - a, p[(tp >= a) & (tp <= b)], busy, swing, constants)

    def model_energy(self, a: float, b: float) -> float:
        if self.model is None or self.activity is None:
            return float("nan")
        return ap.energy_between(self.model, self.activity, a, b)


def gpu_energies(frames: Mapping[str, pd.DataFrame]) -> list[GpuEnergy]:
    """Every GPU of the run with an energy counter, its activity model fitted where GPM ran."""
    smi, dcgm = frames.get("smi"), frames.get("dcgm")
    if smi is None:
        return []
    out = []
    for col in smi.columns:
        m = _COUNTER.fullmatch(str(col))
        if not m:
            continue
        scope = m.group("scope")
        power = _series(smi, f"smi/{scope}/power_sample_w")
        if len(power[0]) < 3:
            power = _series(smi, f"smi/{scope}/power_w")
        busy = _series(dcgm, f"dcgm/{scope}/gr_engine_active_pct")
        if not len(busy[0]):
            busy = _series(smi, f"smi/{scope}/gpu_util_pct")
        activity = None
        if dcgm is not None:
            cols = {f: f"dcgm/{scope}/{f}" for f in ap.FEATURES if f"dcgm/{scope}/{f}" in dcgm.columns}
            if cols:
                part = dcgm[["time", *cols.values()]].dropna()
                activity = ap.activity_trace(part["time"], {f: part[c] for f, c in cols.items()})
                activity = activity if len(activity.t) > 2 else None
        gpu = GpuEnergy(scope, _series(smi, str(col)), power, busy, activity)
        if activity is not None:
            gpu.model = ap.fit(activity, *power)
            tc, c = gpu.counter
            if gpu.model is not None and len(tc) > 1:
                lo, hi = float(max(tc[0], activity.t[0])), float(min(tc[-1], activity.t[-1]))
                if hi > lo:  # scaled where the span is long enough (activity_power.scaled)
                    counter_j = float(np.interp(hi, tc, c) - np.interp(lo, tc, c))
                    gpu.model = ap.scaled(gpu.model, counter_j, lo, hi, activity)
        out.append(gpu)
    return out


def run_figures(frames: Mapping[str, pd.DataFrame],
                constants: SensorConstants | None = None) -> dict[str, float]:
    """Summary metrics for the run: per GPU the counter energy's interval and flag
    (``summary/smi/<scope>/energy_j_ci95_pct``, ``..._ci95_flag``) and, where GPM ran and
    the model could be fitted, ``summary/energy_model/<scope>/activity_energy_j``."""
    constants = constants or load_constants()
    out: dict[str, float] = {}
    for gpu in gpu_energies(frames):
        tc, c = gpu.counter
        if len(tc) < 2 or not tc[-1] > tc[0]:
            continue
        a, b = float(tc[0]), float(tc[-1])
        key = schema.summary_key(f"smi/{gpu.scope}/energy_j")
        ci = gpu.interval(a, b, constants)
        if np.isfinite(ci.ci95_pct):
            out[schema.ci_key(key)] = ci.ci95_pct
            out[schema.ci_flag_key(key)] = flag_code(ci)
        if gpu.model is not None and gpu.activity is not None:
            lo, hi = max(a, float(gpu.activity.t[0])), min(b, float(gpu.activity.t[-1]))
            est = gpu.model_energy(lo, hi) if hi > lo else float("nan")
            if np.isfinite(est):  # GPM's first read comes a moment after the counter's: prorated
                out[schema.energy_model_key(gpu.scope)] = est * (b - a) / (hi - lo)
    return out


def span_interval(frames: Mapping[str, pd.DataFrame], scope: str, a: float,
                  b: float) -> EnergyInterval | None:
    """The 95 % interval of GPU ``scope``'s energy over [a, b] (None without its counter or
    with unusable $RADTRACK_SENSOR_CONSTANTS); an attributed share carries its GPU's relative
    interval (the split itself adds an error this does not count)."""
    gpu = next((g for g in gpu_energies(frames) if g.scope == scope), None)
    if gpu is None or not b > a:
        return None
    try:
        constants = load_constants()
    except ValueError:
        return None
    ci = gpu.interval(a, b, constants)
    return ci if np.isfinite(ci.ci95_pct) else None
