"""Environment variables shared by the launcher, the workload process and RADTBenchmark."""

from __future__ import annotations

import os
from pathlib import Path

RUN_ID = "RADTRACK_RUN_ID"
TRACKING_URI = "MLFLOW_TRACKING_URI"
MLFLOW_RUN_ID = "MLFLOW_RUN_ID"  # never set for the script: its runs are its own
RUN_EVENTS = "RADTRACK_RUN_EVENTS"  # the script's MLflow runs as they appear (script/run_events.py)
MAX_EPOCH = "RADTRACK_MAX_EPOCH"
MAX_TIME = "RADTRACK_MAX_TIME"  # minutes, float
MANUAL = "RADTRACK_MANUAL"  # "1" when listeners start on RADTBenchmark.__enter__
CONTROL_DIR = "RADTRACK_CONTROL_DIR"  # manual mode: the script touches start/stop files here
START_TIME = "RADTRACK_START_TIME"  # unix seconds when the launcher released the script
HOME = "RADTRACK_HOME"
WINDOWS_FILE = "RADTRACK_WINDOWS_FILE"  # RADTBenchmark appends its code windows here (JSON lines)

#: set in the script's process only (not the listeners'): its value, the row's launch key,
#: marks every process of the script's tree, including those that left its process group
TREE = "RADTRACK_TREE"

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def radtrack_home() -> Path:
    """Folder for spools and per-run scratch (MPS pipes, logs): ``$RADTRACK_HOME`` or ./.radtrack."""
    return Path(os.environ.get(HOME, ".radtrack")).absolute()
