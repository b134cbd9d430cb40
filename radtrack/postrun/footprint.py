"""Carbon footprint: CO2-equivalent of measured energy at a grid carbon intensity.

    co2e_g = energy_j / 3.6e6 (kWh) x intensity (g CO2e / kWh) x PUE

The intensity comes from the sheet's ``CarbonIntensity`` cell, else ``--carbon-intensity``,
else ``$RADTRACK_CARBON_INTENSITY`` (no network lookup: radtrack works offline); the data
centre's power usage effectiveness likewise from ``PUE`` / ``--pue`` / ``$RADTRACK_PUE``
(default 1: the GPUs' energy only). Without an intensity no footprint is recorded. Each run
records the figures and where they came from as tags, so a report made later uses what was
in force when the run ran. The formula, the figures' rules and the reading of a run's tags
are pure computation: radtrack/compute/carbon.py.
"""

from __future__ import annotations

import os

from radtrack.compute.carbon import Carbon, check_intensity, check_pue
from radtrack.errors import RadtrackError

INTENSITY_ENV = "RADTRACK_CARBON_INTENSITY"
PUE_ENV = "RADTRACK_PUE"


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
