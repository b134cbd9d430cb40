"""Sheet columns, header-name matching and the Status cell's words."""

from __future__ import annotations

import re
from pathlib import Path

REQUIRED = ("Experiment", "Workload", "Devices", "Collocation", "File", "Listeners", "Params")
# Status and Run are radtrack's to write: a new sheet may leave them out, and the first
# write-back appends them to the header (radtrack/sheet/writeback.py).
OPTIONAL = ("Status", "Run", "Interval", "MaxEpoch", "MaxTime", "Env", "Clocks", "PowerLimit",
            "RunName", "Manual", "CarbonIntensity", "PUE",
            # the SLURM executor's own (radtrack/executors/slurm_options.py ROW_OPTIONS)
            *("Partition", "Account", "TimeLimit", "QoS", "Constraint", "Cpus", "Job"), "Nodes")
# PENDING: a workload submitted to SLURM and not started yet.
STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED", "PENDING")


def column_key(name: str) -> str:
    """Header matching ignores case, spaces, '_' and '-' ("Max Epoch" == "max_epoch")."""
    return re.sub(r"[\s_\-]", "", name).lower()


COLUMNS = {column_key(c): c for c in (*REQUIRED, *OPTIONAL)}


def is_sheet(path: str | Path) -> bool:
    """Whether a launch argument names an experiment sheet (a ``.csv`` file)."""
    return Path(path).suffix.lower() == ".csv"


def status_word(cell: str) -> str:
    """The status part of a Status cell ('FINISHED exp-3 A' -> 'FINISHED'); '' when empty."""
    parts = cell.split()
    return parts[0].upper() if parts else ""


def status_cell(status: str, run_name: str | None) -> str:
    """The Status cell radtrack writes: ``<STATUS> <run name>``, e.g. 'FINISHED exp-3 A'."""
    return f"{status.upper()} {run_name}" if run_name else status.upper()
