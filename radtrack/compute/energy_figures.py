"""Error bars and the activity model's second figure for a run's energy, from its traces.

Pure computation over the listeners' wide frames (``time``, ``step``, one column per key,
as radtrack/store/traces.py stores them): per device with a declared energy counter
(role ``energy_counter``, radtrack/vocab/energy_sources.py; ``smi/<scope>/energy_j`` on a
GPU), whatever listener reads it,

- the counter's 95 % interval over the run or any window of it
  (radtrack/compute/energy_error.py), from the device's own power samples (a
  ``device_power`` series of flavour ``samples``, else its instantaneous power) and its
  busy time (a ``utilisation`` series named ``gr_engine_active_pct``, GPM's, else
  ``gpu_util_pct``, NVML's);
- where GPM activity was recorded, the activity model's energy
  (radtrack/compute/activity_power.py: fitted on the run's steady stretches, scaled to the
  counter over the run when the run is at least ``LONG_SPAN_S`` long; the code windows use
  the same model), stored next to the counter's under its own name; without GPM, or without
  steady stretches at two activity levels, there is none (the counter and its interval
  stand alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from radtrack.compute import activity_power as ap
from radtrack.compute import stats
from radtrack.compute.energy_error import (
    TOO_SHORT,
    EnergyInterval,
    SensorConstants,
    interval,
    load_constants,
    reading_error_j,
)
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.device_identity import device_facts

#: a device's busy time, the first of these names it has (a ``utilisation`` series)
BUSY = ("gr_engine_active_pct", "gpu_util_pct")


def frame_keys(frames: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every listener key the frames hold."""
    return sorted({str(c) for f in frames.values() for c in f.columns if c not in ("time", "step")})


def frame_of(frames: Mapping[str, pd.DataFrame], key: str) -> pd.DataFrame | None:
    """The listener's frame that holds ``key`` (its first part names the listener)."""
    frame = frames.get(key.split("/", 1)[0])
    return frame if frame is not None and key in frame.columns else None


def _series(frames: Mapping[str, pd.DataFrame], key: str | None,
            scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    frame = frame_of(frames, key) if key else None
    if frame is None:
        return np.array([]), np.array([])
    part = frame[["time", key]].dropna().sort_values("time")
    return part["time"].to_numpy(dtype=float), part[key].to_numpy(dtype=float) * scale


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
    counter_key: str = ""  # the counter's series, e.g. "smi/gpu0/energy_j"
    #: the counter's refresh period as its listener declares it (the cautious default where none)
    refresh_s: float = es.DEFAULT_REFRESH_S

    def constants(self, model: str | None) -> SensorConstants:
        """The sensor constants of its model (``model``), by its declared period where unmeasured."""
        return load_constants(gpu=model, refresh_s=self.refresh_s)

    def interval(self, a: float, b: float, constants: SensorConstants) -> EnergyInterval:
        """The counter's 95 % interval over [a, b], the stale-reading term over the counter
        readings its edges are interpolated between (each one update of the sensor stale at
        most, at the power then)."""
        tp, p = self.power
        tb, u = self.busy
        swing = sum(self.model.slopes_w.values()) * 100 if self.model is not None else None
        busy = u[(tb > a) & (tb <= b)] if len(tb) else None
        tc = self.counter[0]
        stale = (reading_error_j(a, b, tc, np.interp(tc, tp, p), constants.update_s)
                 if len(tp) and len(tc) > 1 else 0.0)
        return interval(b - a, p[(tp >= a) & (tp <= b)], busy, swing, constants, stale)

    def model_energy(self, a: float, b: float) -> float:
        if self.model is None or self.activity is None:
            return float("nan")
        return ap.energy_between(self.model, self.activity, a, b)


def gpu_energies(frames: Mapping[str, pd.DataFrame]) -> list[GpuEnergy]:
    """Every device of the run with a declared energy counter, its activity model fitted
    where activity (GPM's) was recorded."""
    keys = frame_keys(frames)
    out = []
    for scope, found in es.sources(keys).items():
        counter = es.best(found, "counter")
        if counter is None:
            continue
        sampled = es.best(found, "samples")
        power = _series(frames, sampled.key, sampled.scale) if sampled else (np.array([]),) * 2
        if len(power[0]) < 3:
            polled = es.best(found, "power") or es.best(found, "average")
            power = _series(frames, polled.key if polled else None, polled.scale if polled else 1.0)
        busy = (np.array([]), np.array([]))
        for name in BUSY:
            busy = _series(frames, es.find(keys, scope, name, "utilisation"))
            if len(busy[0]):
                break
        activity = None
        cols = {f: k for f in ap.FEATURES if (k := es.find(keys, scope, f, "utilisation"))}
        if cols:  # the features of one listener, read at the same instants
            listener = next(iter(cols.values())).split("/", 1)[0]
            cols = {f: k for f, k in cols.items() if k.split("/", 1)[0] == listener}
            frame = frame_of(frames, next(iter(cols.values())))
            if frame is not None:
                part = frame[["time", *cols.values()]].dropna()
                activity = ap.activity_trace(part["time"], {f: part[c] for f, c in cols.items()})
                activity = activity if len(activity.t) > 2 else None
        tc, c = _series(frames, counter.key, counter.scale)
        # one counter over a restarted listener's lives (it counts from 0 again), the gap
        # between two bridged by the power readings
        gpu = GpuEnergy(scope, (tc, stats.stitch_counter(c, tc, power if len(power[0]) >= 2 else None)),
                        power, busy, activity, counter_key=counter.key,
                        refresh_s=counter.refresh_s or es.DEFAULT_REFRESH_S)
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


def gpu_models(tags: Mapping[str, object]) -> dict[str, str]:
    """scope -> the GPU model a listener declared for it (its ``name`` device fact,
    radtrack/vocab/device_identity.py: NVML's name from smi, the market name from amdsmi),
    from a run's or a hello's tags: what picks the sensor's constants (energy_error.for_gpu),
    whichever listener read the device."""
    return {scope: facts["name"] for scope, facts in device_facts(tags).items() if "name" in facts}


def run_figures(frames: Mapping[str, pd.DataFrame], constants: SensorConstants | None = None,
                models: Mapping[str, str] | None = None) -> dict[str, float]:
    """Summary metrics for the run: per GPU the counter energy's interval and flag
    (``summary/<counter key>_ci95_pct``, e.g. ``summary/smi/gpu0/energy_j_ci95_pct``, ``..._ci95_flag``) and, where GPM ran and
    the model could be fitted, ``summary/energy_model/<scope>/activity_energy_j``. The
    interval uses ``constants``, else those of the GPU model ``models`` names for its scope."""
    out: dict[str, float] = {}
    for gpu in gpu_energies(frames):
        sensor = constants or gpu.constants((models or {}).get(gpu.scope))
        tc, c = gpu.counter
        if len(tc) < 2 or not tc[-1] > tc[0]:
            continue
        a, b = float(tc[0]), float(tc[-1])
        key = schema.summary_key(gpu.counter_key)
        ci = gpu.interval(a, b, sensor)
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
                  b: float, model: str | None = None) -> EnergyInterval | None:
    """The 95 % interval of GPU ``scope``'s energy over [a, b] under GPU model ``model``'s
    sensor constants (None without its counter or with unusable $RADTRACK_SENSOR_CONSTANTS);
    an attributed share carries its GPU's relative interval (the split's bound is added by
    split_model.with_split)."""
    gpu = next((g for g in gpu_energies(frames) if g.scope == scope), None)
    if gpu is None or not b > a:
        return None
    try:
        constants = gpu.constants(model)
    except ValueError:
        return None
    ci = gpu.interval(a, b, constants)
    return ci if np.isfinite(ci.ci95_pct) else None
