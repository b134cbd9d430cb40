"""Carbon footprint: CO2-equivalent of measured energy at a grid carbon intensity.

    co2e_g = energy_j / 3.6e6 (kWh) x intensity (g CO2e / kWh) x PUE

The figures' rules (an intensity in 0..5000 g CO2e/kWh, a PUE in 1..5), the formula, and the
figures a run recorded (its tags, :func:`from_tags`), read alike by the sheet's checks, the
end of a workload and the report. Which figures are in force for a row (its cells, the
command line, the environment) is radtrack/postrun/footprint.py's. Pure: no MLflow, no store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from radtrack.vocab import schema

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
