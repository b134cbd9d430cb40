"""The characterisation studies radtrack is built for, as tables from stored runs only.

Each study has its sheet and README under ``examples/studies/<name>/`` and one module
here; ``radtrack report EXPERIMENT --study NAME`` prints its tables (docs/analysis.md):

- ``power-variation``: power, SM clock and temperature of SGEMM solo, time-shared, under
  MPS, space-shared and with locked clocks (:mod:`.power_variation`);
- ``multi-level-utilisation``: GPU utilisation vs SM active, occupancy, tensor and DRAM
  activity per training workload and precision (:mod:`.utilisation`);
- ``time-to-accuracy``: time to a target accuracy over repeats, its CV per GPU model, and
  GPU utilisation over the first 3 minutes (:mod:`.time_to_accuracy`);
- ``host-gpu-eda``: per-workload GPU and CPU utilisation, power, temperatures, their
  correlations, and a baseline that predicts GPU temperature (:mod:`.host_gpu_eda`);
- ``attribution``: each co-located run's attributed energy per unit against its solo runs',
  and how evenly identical co-located rows were split (:mod:`.attribution`): the split
  checked on the user's own hardware.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pandas as pd

from radtrack.errors import RadtrackError


@dataclass(frozen=True)
class StudyResult:
    """A study's tables, the main one first, and what the printed report says about them."""

    study: str
    experiment: str
    tables: dict[str, pd.DataFrame]
    titles: dict[str, str]  # table name -> one-line heading
    notes: list[str]  # caveats: what was missing, which rule applied

    @property
    def main(self) -> str:
        return next(iter(self.tables))


#: study name -> module under radtrack.analysis.studies
STUDIES = {
    "power-variation": "power_variation",
    "multi-level-utilisation": "utilisation",
    "time-to-accuracy": "time_to_accuracy",
    "host-gpu-eda": "host_gpu_eda",
    "attribution": "attribution",
}


def run_study(name: str, experiment: str, workload: int | None = None,
              tracking_uri: str | None = None,
              target: tuple[str, float] | None = None) -> StudyResult:
    """The tables of study ``name`` over the stored runs of ``experiment``."""
    if name not in STUDIES:
        raise RadtrackError(f"unknown study {name!r}; studies: {', '.join(STUDIES)}")
    module = importlib.import_module(f"radtrack.analysis.studies.{STUDIES[name]}")
    return module.study(experiment, workload=workload, tracking_uri=tracking_uri, target=target)
