"""A 95 % interval for an energy figure read from the GPU's energy counter over a window.

Why one is needed: the H100's power sensor publishes a reading every ``update_s`` that
averages only the last ``avg_window_s`` of the power (radtrack/compute/sensor_model.py;
Yang et al., SC24), and the energy counter integrates those readings. A steady load is
measured to 0.02 %; a load switching on and off faster than the sensor updates is seen at
whatever phase the sensor happens to catch, and identical 8-s windows of a 20-ms-period
load read 284 to 450 W (issue 30).

The interval combines, as relative standard deviations added in quadrature (x 1.96):

- ``floor``: the counter's spread on a steady load (``steady_cv_pct``);
- ``hidden``: power swings the sensor may not see. Each activity reading (GPM SM active,
  else NVML's GPU utilisation) that is partial (between 0 and 100 %) says the GPU
  alternated between busy and idle inside it; such a load has a power variance of
  ``f (1 - f) x swing_w^2`` at time scales the sensor's samples may miss. What the
  driver's samples do show at their own 20-ms scale is taken off; of the rest, the part
  the sensor does not look at (1 - ``avg_window_s``/``update_s``) times ``alias_gain`` is
  the per-reading error, which averages down only as the sensor's phase drifts against
  the load: by sqrt(``alias_corr_s`` / window);
- ``visible``: fast swings the samples do show, of which the sensor misses the fraction
  1 - ``avg_window_s``/``update_s`` at each update, independent between updates;
- ``edges``: the counter moves in steps of one update, so each end of a window is uncertain
  by about one update's energy (what makes a short window unreliable);
- ``lag``: between two counter readings the energy is placed by the driver's power samples,
  which run ``lag_s`` ahead of the counter (its averaging window); where the power changes
  within ``lag_s`` at a window's ends, that much energy lands on the wrong side of each
  end: ``lag_s`` x the RMS change of the samples over ``lag_s``, per end (0 on a steady load
  and on loads periodic within the counter's window; 1-s bursts on an H200: up to 15 % at 1-2 s);
- ``readings``: each counter reading the window's energy is interpolated from may be up to one
  update stale (the counter publishes every ``update_s``; a reading returns the last published
  value), short of the true energy by ``U x P`` (U uniform over [0, ``update_s``], P the power
  at the reading); a window edge between readings t_i and t_i+1 carries (1 - w) of t_i's error
  and w of t_i+1's (w the edge's fraction of the gap), so a window inside a long gap carries
  the two readings' difference x its share of the gap: ``update_s`` / gap of its energy at
  worst, whatever the window's length. The mean lag (half an update) cancels between readings
  at the same power, not between an idle one and a busy one: the term is the error's RMS, mean
  included (:func:`reading_error_j`; issue 51: a run's last reading, at 718 W, 63 J short,
  spread over a 12.6-s gap from its first, idle, put every window inside it -0.9 % off).

An interval above ``threshold_pct`` is flagged with its main cause: "window too short"
(the edge term dominates, or the window is under ``min_window_s``) or "bursty load near the
sensor's period". The constants are measured per GPU model (benchmarks/power_sensor.py writes
a ``sensor_constants.json`` for its GPU and driver): :data:`KNOWN` holds those measured,
chosen by the model name the GPU's listener declares (:func:`load_constants` ``gpu``); a
model not measured gets the H100's (the widest). ``RADTRACK_SENSOR_CONSTANTS`` (a path to
such a JSON file, or the JSON itself) replaces them for every GPU.

Pure numpy; no radtrack imports (the sensor benchmark loads it by path).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np

CONSTANTS_ENV = "RADTRACK_SENSOR_CONSTANTS"
BURSTY = "bursty load near the sensor's period"
TOO_SHORT = "window too short"
Z95 = 1.96


@dataclass(frozen=True)
class SensorConstants:
    """The sensor's characterisation; defaults: NVIDIA H100 80GB HBM3, driver 580.159.04.

    The defaults are the cautious reading of two measurements of that GPU and driver: the
    issue's (a 20-ms load's counter spread 19.3 % over 8-s windows, as if the sensor saw
    25 ms of every 100 ms, Yang et al.'s figure) and benchmarks/power_sensor.py's on
    2026-11-24 (the counter updated every 100 ms, saw about 75 ms of each and spread only
    2.3 %: benchmarks/results/h100-2026-11-24-power-sensor/sensor_constants.json holds
    those constants, for ``RADTRACK_SENSOR_CONSTANTS``).
    """

    gpu: str = "NVIDIA H100 80GB HBM3"
    driver: str = "580.159.04"
    source: str = ("issue 30 table (counter CV 19.3 % over 8-s windows of a 20-ms load) and "
                   "Yang et al. SC24 (25 ms seen of every 100 ms)")
    update_s: float = 0.1  # a new reading every ...
    avg_window_s: float = 0.025  # ... averaging only this much of the power
    sample_s: float = 0.02  # the driver's power samples
    steady_cv_pct: float = 0.05  # the counter on a steady load (0.02 % measured; rounded up)
    swing_w: float = 572.6  # busy - idle power when no model of this run says better
    alias_gain: float = 1.0  # per-reading error / hidden power swing
    alias_corr_s: float = 0.55  # how long the sensor's phase against a periodic load persists
    min_window_s: float = 2.0  # below: flagged whatever the figure says
    # uncertainty of each end of a window (one update where 0): the counter's step, narrowed
    # where the power samples place it (H200: 0.05 s, benchmarks/attribution_analysis.py)
    edge_s: float = 0.0
    threshold_pct: float = 5.0  # an interval wider than this is flagged
    lag_s: float = 0.0  # how far the driver's power samples run ahead of the counter (0: not measured)


#: the H200's sensor, measured on 2026-11-29 (benchmarks/results/h200-2026-11-29-attribution-2:
#: benchmarks/power_sensor.py --quick): the counter updates every 100 ms and averages all of it
#: (edges 100.0 ms, counter fit 118.9 ms), so a 20-ms load's 8-s windows spread 0.1 % (the
#: H100's: 19.3 %); edge_s and lag_s from the coverage of 1-30 s windows on steady,
#: co-located and bursty loads against an independent counter reader (same folder)
H200 = SensorConstants(
    gpu="NVIDIA H200", source="benchmarks/power_sensor.py 2026-11-29 (H200, one device call)",
    update_s=0.1, avg_window_s=0.1, sample_s=0.02, swing_w=560.2, alias_corr_s=0.55,
    edge_s=0.05, lag_s=0.15)
#: measured sensors by the model name NVML gives (nvmlDeviceGetName)
KNOWN = {"NVIDIA H100 80GB HBM3": SensorConstants(), "NVIDIA H200": H200}


def for_gpu(model: str | None, refresh_s: float | None = None) -> SensorConstants:
    """The measured constants of GPU model ``model`` (its listener's name of it; a MIG slice's
    parent model counts), else the H100's defaults, the widest intervals measured, updating
    every ``refresh_s`` (the period the sensor's listener declares, vocab/series.py
    Series.refresh_s) where that is slower, seeing the same quarter of each update."""
    name = (model or "").strip()  # a MIG slice: "<parent model> MIG 1g.18gb"
    known = KNOWN.get(name) or next((c for m, c in KNOWN.items() if name.startswith(m + " MIG")), None)
    if known is not None:
        return known
    base = SensorConstants()
    if refresh_s is None or not refresh_s > base.update_s:
        return base
    return replace(base, gpu=name or base.gpu, update_s=refresh_s,
                   avg_window_s=base.avg_window_s * refresh_s / base.update_s,
                   source=f"{base.source}; updating every {refresh_s:g} s as its listener declares")


def load_constants(text: str | None = None, gpu: str | None = None,
                   refresh_s: float | None = None) -> SensorConstants:
    """GPU model ``gpu``'s constants (:func:`for_gpu`, its sensor's declared ``refresh_s``), replaced field by field from
    ``$RADTRACK_SENSOR_CONSTANTS`` (or ``text``): a JSON object, or a path to a file holding
    one (a ``constants`` member is used where present, as in benchmarks/power_sensor.py's
    output)."""
    raw = os.environ.get(CONSTANTS_ENV, "") if text is None else text
    base = for_gpu(gpu, refresh_s)
    if not raw.strip():
        return base
    where = CONSTANTS_ENV
    if not raw.lstrip().startswith("{"):
        path = Path(raw.strip())
        if not path.is_file():
            raise ValueError(f"{CONSTANTS_ENV}={raw.strip()!r}: no such file")
        where, raw = str(path), path.read_text()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict) and isinstance(data.get("constants"), dict):
        data = data["constants"]
    known = {f.name: f.type for f in fields(SensorConstants)}
    if not isinstance(data, dict) or set(data) - set(known):
        extra = sorted(set(data) - set(known)) if isinstance(data, dict) else "not an object"
        raise ValueError(f"{where}: unknown sensor constant(s) {extra}; known: {', '.join(known)}")
    values: dict[str, object] = {}
    for name, value in data.items():
        if known[name] == "float":
            if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"{where}: {name} must be a number >= 0, got {value!r}")
            values[name] = float(value)
        else:
            values[name] = str(value)
    return replace(base, **values)


@dataclass(frozen=True)
class EnergyInterval:
    ci95_pct: float  # half-width of the 95 % interval, % of the figure
    reason: str  # "" when not flagged, else BURSTY or TOO_SHORT (with the window's figures)
    parts_pct: Mapping[str, float]  # each term's relative standard deviation, %

    @property
    def flagged(self) -> bool:
        return bool(self.reason)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def fast_std(values: np.ndarray) -> float:
    """The standard deviation of a series at its own sampling scale: sqrt(var(diff) / 2),
    blind to slow drifts and phases that last many samples."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(np.std(np.diff(v)) / math.sqrt(2)) if len(v) > 2 else 0.0


def reading_error_j(a: float, b: float, reading_t: np.ndarray, reading_power_w: np.ndarray,
                    update_s: float) -> float:
    """The RMS error (J) of the energy over [a, b] from the counter readings taken at
    ``reading_t`` (sorted; the power at each ``reading_power_w``), each one up to ``update_s``
    stale: its error ``-U x P``, U uniform over [0, update_s] and independent between readings
    (a listener's polls drift against the counter's updates): mean ``-P x update_s / 2``,
    spread ``P x update_s / sqrt(12)``. Each edge is interpolated between the readings around it
    (linearly in time: the power-shaped weight differs little over a steady stretch), an edge
    at or beyond the first or last reading takes that reading's error whole. The window's
    coefficients sum to 0, so the mean errors cancel where the readings' powers are equal and
    add up where they differ; 0 with fewer than two readings."""
    t = np.asarray(reading_t, dtype=float)
    lag_j = np.nan_to_num(np.asarray(reading_power_w, dtype=float)) * update_s
    if len(t) < 2 or not update_s > 0:
        return 0.0
    coef = np.zeros(len(t))
    for edge, sign in ((a, -1.0), (b, 1.0)):
        i = int(np.clip(np.searchsorted(t, edge, side="right") - 1, 0, len(t) - 2))
        gap = t[i + 1] - t[i]
        w = float(np.clip((edge - t[i]) / gap, 0.0, 1.0)) if gap > 0 else 1.0
        coef[i] += sign * (1.0 - w)
        coef[i + 1] += sign * w
    mean = float(np.sum(coef * lag_j)) / 2.0
    return math.sqrt(mean**2 + float(np.sum((coef * lag_j) ** 2)) / 12.0)


def interval(window_s: float, power_w: np.ndarray, activity_pct: np.ndarray | None = None,
             swing_w: float | None = None, constants: SensorConstants | None = None,
             readings_j: float = 0.0) -> EnergyInterval:
    """The 95 % interval of the counter's energy over a window of ``window_s`` seconds.

    ``power_w``: the driver's power samples in the window (or polled power readings);
    ``activity_pct``: activity readings in the window (GPM SM active, else GPU
    utilisation), each over the time since the one before; ``swing_w``: busy minus idle
    power (an activity model's slope x 100), else the constants'; ``readings_j``: the
    RMS error the stale counter readings put on the window's energy
    (:func:`reading_error_j`; 0 where the counter's readings are not known)."""
    c = constants or SensorConstants()
    p = np.asarray(power_w, dtype=float)
    p = p[np.isfinite(p)]
    mean = float(np.mean(p)) if len(p) else float("nan")
    if not (window_s > 0 and mean > 0):
        return EnergyInterval(float("nan"), "", {})
    visible = fast_std(p)
    hidden_var = 0.0
    if activity_pct is not None:
        f = np.clip(np.asarray(activity_pct, dtype=float) / 100.0, 0.0, 1.0)
        f = f[np.isfinite(f)]
        if len(f):
            swing = c.swing_w if swing_w is None or not swing_w > 0 else swing_w
            hidden_var = max(float(np.mean(f * (1 - f))) * swing**2 - visible**2, 0.0)
    coverage = min(c.avg_window_s / c.update_s, 1.0) if c.update_s > 0 else 1.0
    updates = max(window_s / c.update_s, 1.0) if c.update_s > 0 else math.inf
    parts = {
        "floor": c.steady_cv_pct / 100.0,
        "hidden": (c.alias_gain * math.sqrt(hidden_var * (1.0 - coverage)) / mean
                   * math.sqrt(min(c.alias_corr_s / window_s, 1.0))),
        "visible": visible / mean * math.sqrt((1.0 - coverage) / updates),
        # two ends, each uniform over one update (or the measured edge_s)
        "edges": (c.edge_s or c.update_s) / window_s / math.sqrt(6.0),
        "lag": math.sqrt(2.0) * c.lag_s * _change_rms(p, c) / mean / window_s,
        "readings": readings_j / (mean * window_s),
    }
    ci = Z95 * math.sqrt(sum(v * v for v in parts.values())) * 100.0
    reason = ""
    if ci > c.threshold_pct or window_s < c.min_window_s:
        main = max(parts, key=lambda k: parts[k])
        if window_s < c.min_window_s or main in ("edges", "readings"):
            reason = f"{TOO_SHORT} ({window_s:.3g} s; the sensor updates every {c.update_s:g} s)"
        elif main == "lag":  # a sensor that sees all: the samples' timing at the ends
            reason = (f"{BURSTY} (power swings within the counter's {c.lag_s * 1000:g}-ms lag "
                      f"at the window's ends)")
        else:
            reason = (f"{BURSTY} (the sensor sees {c.avg_window_s * 1000:g} ms of every "
                      f"{c.update_s * 1000:g} ms)")
    return EnergyInterval(ci, reason, {k: v * 100.0 for k, v in parts.items()})


def _change_rms(p: np.ndarray, c: SensorConstants) -> float:
    """RMS change over ``lag_s`` of the power averaged as the counter averages it (over
    ``avg_window_s``; samples ``sample_s`` apart): loads periodic within the counter's window
    (and the samples' own noise) count for little."""
    if not (c.lag_s > 0 and c.sample_s > 0):
        return 0.0
    k, n = max(int(round(c.lag_s / c.sample_s)), 1), max(int(round(c.avg_window_s / c.sample_s)), 1)
    if len(p) <= k + n:
        return 0.0
    smooth = np.convolve(p, np.full(n, 1.0 / n), mode="valid")
    return float(np.sqrt(np.mean((smooth[k:] - smooth[:-k]) ** 2)))


def combine(figures: list[tuple[float, float]]) -> float:
    """The relative 95 % half-width (%) of a sum of energies given as (joules, ci95 %),
    errors taken as independent; NaN when any part has no interval."""
    total = sum(j for j, _ in figures)
    if not figures or not total > 0 or any(not math.isfinite(ci) for _, ci in figures):
        return float("nan")
    return math.sqrt(sum((j * ci) ** 2 for j, ci in figures)) / total
