"""A device's and a rail's energy over a span, from the series the vocabulary picks.

Which series measure a device's or a rail's energy is the vocabulary's rule
(radtrack/vocab/energy_sources.py: by declared role, never by listener); the joules are
computed here: a counter's increase over its lives, a power's trapezoid integral
(radtrack/compute/stats.py). Pure: no MLflow, no store access.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from radtrack.compute import stats
from radtrack.vocab.energy_sources import Source, bridging_power_key, energy_sources, rail_sources


def rail_energies(readings: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """rail name -> joules over ``readings`` (key -> (times s, values): a run's series cut
    to its span, radtrack/store/spans.py), by :func:`series_energy` like a device's; NaN
    where its series has fewer than two readings. Never part of a device's or a run's total."""
    return {rail: series_energy(src, *readings[src.key], _bridge(readings, src))
            for rail, src in rail_sources(readings).items()}


def series_energy(src: Source, t: np.ndarray, v: np.ndarray,
                  power: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Joules of one source's readings (times ``t`` in s): a counter's increase over its
    lives (stats.counter_delta: a restarted listener counts from 0 again; ``power``, the
    device's power readings, bridges the gap between two), a power's trapezoid integral;
    NaN without enough readings."""
    v = np.asarray(v, dtype=float) * src.scale
    if src.cumulative:
        return stats.counter_delta(v, np.asarray(t, dtype=float), power)
    return stats.integrate(np.asarray(t, dtype=float), v)


def _bridge(readings: Mapping[str, tuple[np.ndarray, np.ndarray]], src: Source
            ) -> tuple[np.ndarray, np.ndarray] | None:
    key = bridging_power_key(src.key) if src.cumulative else None
    return readings.get(key) if key else None


def device_energies(readings: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """device -> joules over ``readings`` (key -> (times s, values)), from each device's
    best source (:func:`radtrack.vocab.energy_sources.energy_sources`)."""
    out = {}
    for device, src in energy_sources(readings).items():
        out[device] = series_energy(src, *readings[src.key], _bridge(readings, src))
    return out
