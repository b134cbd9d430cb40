"""Run one workload: start its rows, release them together, supervise, finish.

``run_workload`` gets the rows of one (Experiment, Workload) with the placement environment
of each row and a :class:`~radtrack.run.record.Recorder` that creates their MLflow runs
alongside; it returns when every row has ended and everything it recorded is stored (or
safely spooled for ``radtrack sync``). The four steps live in start.py, supervise.py,
finish.py; this module holds the row's state and the order of the steps.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.run.envcapture import capture_in_background
from radtrack.run.finish import end_row, store_row, store_row_params
from radtrack.run.rows import Interrupt, Row
from radtrack.run.start import (
    abort,
    await_listeners,
    command_for,
    measures_energy,
    release,
    say,
    spawn_rows,
    start_row_listeners,
)
from radtrack.run.supervise import supervise
from radtrack.script import env as renv
from radtrack.store import schema

if TYPE_CHECKING:
    from radtrack.run.record import Recorder

__all__ = ["Interrupt", "Row", "command_for", "run_workload", "say", "store_row_params"]


def run_workload(rows: list[Row], interrupt: Interrupt, recorder: Recorder, grace: float = 10.0,
                 spool_root: Path | None = None, wait_listeners: bool | None = None) -> None:
    """Run ``rows`` together; fill in each row's status, exit code, tags. Never raises for a
    failing script: a row's failure does not stop its siblings. The scripts start without
    waiting for the store (``recorder`` creates the runs meanwhile) or, unless
    ``wait_listeners`` (None: when a row has a GPU power listener), for their listeners' first
    reading."""
    spool_root = spool_root or renv.radtrack_home() / "spool"
    barrier_w: list[int] = []
    try:
        barrier_w = spawn_rows(rows, grace, spool_root)
        for row in rows:
            if not row.spec.manual:
                start_row_listeners(row)
        if wait_listeners or (wait_listeners is None and measures_energy(rows)):
            recorder.start()  # the launcher only waits now: MLflow's import costs nothing
            await_listeners(rows)
        for row in rows:
            if not row.spec.manual:
                row.started = time.time()
    except BaseException:
        abort(rows, barrier_w)
        raise
    released = release(barrier_w)
    # the runs are created while the scripts run (started after the release: MLflow's import
    # holds the interpreter for seconds and would slow everything before it)
    recorder.start()
    env_threads = [capture_in_background(row.folder / schema.ENVIRONMENT_DIR) for row in rows]
    supervise(rows, interrupt.event, released)
    for row in rows:
        end_row(row)
    client = recorder.wait()
    if client is None:
        say(f"could not create the runs in the tracking store: {recorder.error}")
    for row in rows:
        store_row(client, row, env_threads)
