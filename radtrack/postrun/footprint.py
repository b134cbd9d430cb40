"""Carbon footprint: CO2-equivalent of measured energy at a grid carbon intensity.

    co2e_g = energy_j / 3.6e6 (kWh) x intensity (g CO2e / kWh) x PUE

The intensity comes from the sheet's ``CarbonIntensity`` cell, else ``--carbon-intensity``,
else ``$RADTRACK_CARBON_INTENSITY`` (no network lookup: radtrack works offline); the data
centre's power usage effectiveness likewise from ``PUE`` / ``--pue`` / ``$RADTRACK_PUE``
(default 1: the GPUs' energy only). Without an intensity no footprint is recorded. Each run
records the figures and where they came from as tags, so a report made later uses what was
in force when the run ran.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from radtrack.errors import RadtrackError
from radtrack.vocab import schema

INTENSITY_ENV = "RADTRACK_CARBON_INTENSITY"
PUE_ENV = "RADTRACK_PUE"
INTENSITY_TAG = schema.CARBON_INTENSITY
SOURCE_TAG = schema.CARBON_SOURCE
PUE_TAG = schema.CARBON_PUE
J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class Carbon:
    intensity_g_per_kwh: float
    source: str  # "sheet", "--carbon-intensity" or "$RADTRACK_CARBON_INTENSITY"
    pue: float = 1.0

    def co2e_g(self, joules: float) -> float:
        return joules / J_PER_KWH * self.intensity_g_per_kwh * self.pue

    def tags(self) -> dict[str, str]:
        return {INTENSITY_TAG: f"{self.intensity_g_per_kwh:g}", SOURCE_TAG: self.source,
                PUE_TAG: f"{self.pue:g}"}


def check_intensity(value: float, where: str) -> float:
    if not math.isfinite(value) or value < 0 or value > 5000:
        raise ValueError(f"{where}: carbon intensity {value:g} g CO2e/kWh is not in 0..5000 "
                         "(grids range from about 10 to 1000)")
    return value


def check_pue(value: float, where: str) -> float:
    if not math.isfinite(value) or not 1.0 <= value <= 5.0:
        raise ValueError(f"{where}: PUE {value:g} must be in 1..5 (total facility power / IT power)")
    return value


def _env_number(name: str) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise RadtrackError(f"${name}={text!r} is not a number") from None


def resolve(row_intensity: float | None, row_pue: float | None, row_source: str) -> Carbon | None:
    """The carbon figures in force for a row: its own (sheet cell or CLI flag, as
    ``row_source`` says), else the environment; None without an intensity."""
    try:
        intensity, source = row_intensity, row_source
        if intensity is None:
            intensity, source = _env_number(INTENSITY_ENV), f"${INTENSITY_ENV}"
            if intensity is not None:
                check_intensity(intensity, f"${INTENSITY_ENV}")
        pue = row_pue if row_pue is not None else _env_number(PUE_ENV)
        if pue is not None and row_pue is None:
            check_pue(pue, f"${PUE_ENV}")
    except ValueError as exc:
        raise RadtrackError(str(exc)) from None
    if intensity is None:
        return None
    return Carbon(intensity, source, 1.0 if pue is None else pue)


def from_tags(tags: Mapping[str, object]) -> Carbon | None:
    """The figures a run recorded (tag values, or a load_runs row's ``tag.`` columns)."""
    def get(key: str) -> object:
        return tags.get(key, tags.get(f"tag.{key}"))

    intensity = get(INTENSITY_TAG)
    if not isinstance(intensity, str) or not intensity:
        return None
    pue = get(PUE_TAG)
    return Carbon(float(intensity), str(get(SOURCE_TAG) or ""),
                  float(pue) if isinstance(pue, str) and pue else 1.0)
