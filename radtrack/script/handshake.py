"""The ids the launcher learns while the script already runs, handed to the script's process.

The script starts before radtrack has imported MLflow or created any run (docs/performance.md,
"Fixed cost per run"). What the script side needs from the store (the row run's id for
``RADTBenchmark``, the row's experiment id as the default of the script's own runs) the
launcher publishes into ``$RADTRACK_ROW_DIR/ids.json`` as soon as it exists; the script side
waits for it only when it first needs it, by which time MLflow's own import has usually taken
longer than the launcher's run creation.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from radtrack.atomic import write_atomic

ROW_DIR = "RADTRACK_ROW_DIR"  # the row's scratch folder (the launcher's; holds ids.json)
IDS_FILE = "ids.json"
RUN_ID = "run_id"  # the row run
EXPERIMENT_ID = "experiment_id"  # the row's experiment
ERROR = "error"  # the launcher could not create them: waiters stop waiting
AWAY = "store_away"  # the store is away for now: the launcher keeps trying, waiters stop waiting
WAIT_S = 120.0
#: written by the launcher just before it signals the row's processes to stop (--max-time,
#: Ctrl-C to the launcher): {"stopped_by": ..., "status": <the row's status>, "t": unix s}.
#: A KeyboardInterrupt in a process of the row with this file present is radtrack's stop,
#: not the user's: no traceback, and the script's runs end with the row's status.
STOP_FILE = "stop"


def publish(folder: Path, **ids: str) -> None:
    """Add ``ids`` to the folder's ids.json (atomically: a reader sees all or nothing)."""
    path = folder / IDS_FILE
    merged = {**read(folder), **ids}
    write_atomic(path, json.dumps(merged))


def read(folder: Path) -> dict[str, str]:
    """What has been published so far (empty before anything was)."""
    try:
        return json.loads((folder / IDS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def wait_for(key: str, folder: Path | None = None, timeout: float = WAIT_S) -> str | None:
    """The published value of ``key``; None outside radtrack, when the launcher published an
    error or that the store is away for now, or after ``timeout`` seconds."""
    if folder is None:
        where = os.environ.get(ROW_DIR)
        if not where:
            return None
        folder = Path(where)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        ids = read(folder)
        if key in ids:
            return ids[key]
        if ERROR in ids or AWAY in ids or time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def request_stop(folder: Path, stopped_by: str, status: str) -> None:
    """Say in the row folder that radtrack is stopping the row (before the signal goes)."""
    try:
        write_atomic(folder / STOP_FILE,
                     json.dumps({"stopped_by": stopped_by, "status": status, "t": time.time()}))
    except OSError:
        pass  # a full disk: the stop still goes, with Python's traceback as before


def stop_request(folder: Path | None = None) -> dict | None:
    """The stop radtrack asked for in the row folder (``$RADTRACK_ROW_DIR`` by default), or None."""
    if folder is None:
        where = os.environ.get(ROW_DIR)
        if not where:
            return None
        folder = Path(where)
    try:
        found = json.loads((folder / STOP_FILE).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
