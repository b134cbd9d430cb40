"""What ``radtrack sync`` needs to do a launcher's work on the store later, kept in the row's spool.

A row's spool folder (radtrack/store/spool.py) holds, next to the samples:

- ``create.json``, written as soon as the row's script started: how the launcher creates the
  row's runs (experiment, workload number, the parent's and the row's names, tags and start
  times, the workload they belong to). A store that is down or locked when the launcher
  tries leaves the run uncreated; sync creates it from here, as the launcher would have.
- ``finish.json``, written when the row ended: its status, exit code, tags, params, start and
  end, where its output log, environment capture and profiles are, and (once every row of
  the workload ended) the workload run's status. Sync ends the run with these instead of
  calling it KILLED.

Neither holds a password: the tracking URI is kept without it (tracking.without_password)
and sync takes it back from the environment (tracking.with_password).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.atomic import write_atomic

if TYPE_CHECKING:
    from radtrack.spec import RunSpec

CREATE_FILE = "create.json"
FINISH_FILE = "finish.json"


# what create.json keeps of a row's spec besides its names, for sync's end-of-workload step
# (radtrack/postrun/synced.py): the accounting needs the collocation, the footprint the carbon
# row_key and run_id (the Run cell as the sheet was read): what finds the row again in a
# sheet edited since (radtrack/sheet/rowmatch.py), for sync's write-back
SPEC_FIELDS = ("collocation", "carbon_intensity", "pue", "carbon_source", "row_key", "run_id")


def spec_record(spec: RunSpec) -> dict[str, Any]:
    """The row's spec fields of :data:`SPEC_FIELDS`, for ``create.json``."""
    return {name: getattr(spec, name) for name in SPEC_FIELDS}


def write(folder: Path, name: str, data: dict[str, Any]) -> None:
    """``folder/name`` as JSON, atomically (sync reads it whole or not at all). An OSError (a
    full disk) is raised to the caller."""
    write_atomic(folder / name, json.dumps(data, indent=1, default=str))


def read(folder: Path, name: str) -> dict[str, Any] | None:
    """The JSON file ``folder/name``; None when absent or unreadable."""
    try:
        data = json.loads((folder / name).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def update(folder: Path, name: str, /, **fields: Any) -> None:
    """Merge ``fields`` into ``folder/name`` (created when absent)."""
    write(folder, name, {**(read(folder, name) or {}), **fields})
