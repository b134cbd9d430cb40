"""Run one workload: start its rows, release them together, supervise, finish.

``run_workload`` gets the rows of one (Experiment, Workload) with the placement environment
of each row and a :class:`~radtrack.run.record.Recorder` that creates their MLflow runs
alongside; it returns when every row has ended and everything it recorded is stored (or
safely spooled for ``radtrack sync``). The four steps live in start.py, supervise.py,
row_end.py; this module holds the row's state and the order of the steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.device_entries import SHARED_GPUS_ENV, shared_entries, visible_entries
from radtrack.run.envcapture import capture_in_background
from radtrack.run.row_end import end_row, store_row, store_row_params, write_finish
from radtrack.run.rows import Interrupt, Row
from radtrack.run.start import (
    abort,
    await_listeners,
    check_listeners,
    command_for,
    holds_start,
    release,
    say,
    spawn_rows,
    start_row_listeners,
    unavailable,
)
from radtrack.run.supervise import supervise
from radtrack.script import env as renv
from radtrack.store import newstore, storestate
from radtrack.store.outage import scrub, wait_s
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.run.record import Recorder

__all__ = ["Interrupt", "Row", "command_for", "leave_for_sync", "remove_spools", "run_workload", "say",
           "spooled_line", "store_row_params", "unavailable", "write_finish"]


def run_workload(rows: list[Row], interrupt: Interrupt, recorder: Recorder, grace: float = 10.0,
                 spool_root: Path | None = None, wait_listeners: bool | None = None,
                 on_ended: Callable[[list[Row]], object] | None = None) -> list[Row]:
    """Run ``rows`` together; fill in each row's status, exit code, tags. Never raises for a
    failing script: a row's failure does not stop its siblings. The scripts start without
    waiting for the store (``recorder`` creates the runs meanwhile) or, unless
    ``wait_listeners`` (None: when a row has a listener that ``holds_start``), for their
    listeners' first reading. A store that is away (down, restarting, locked) is waited for up to
    ``$RADTRACK_STORE_WAIT_S`` once the rows ended; returns the rows whose end (or whose run)
    is left in their spool for ``radtrack sync`` (radtrack/store/runfiles.py). ``on_ended``
    is called once every row ended, before anything is stored (the detached end:
    radtrack/run/detach.py)."""
    spool_root = spool_root or renv.radtrack_home() / "spool"
    for row in rows:
        row.env.update(script_env(spool_root / row.key))
    # which of its GPUs another row may use too: smi reads the SM shares only there
    for row, shared in zip(rows, shared_entries([visible_entries([], row.env) for row in rows]),
                           strict=True):
        row.env[SHARED_GPUS_ENV] = shared
        if len(rows) > 1:  # what the row's co-location shared: its GPUs, or the host only
            row.tags[schema.SHARED_GPUS] = shared
    # a new SQLite store is made whole before any script (or a child of it) can open it:
    # milliseconds, and only where no check before the launch made it (radtrack/store/newstore.py)
    newstore.prepare(recorder.uri)
    recorder.store_id = storestate.identity(recorder.uri)
    barrier_w: list[int] = []
    try:
        barrier_w = spawn_rows(rows, grace, spool_root)
        waiting = wait_listeners or (wait_listeners is None and holds_start(rows))
        if waiting:
            _start_listeners(rows)
            await_listeners(rows)
        for row in rows:
            if not row.spec.manual:
                row.started = time.time()
                row.launcher_cpu0 = time.process_time()
    except BaseException:
        abort(rows, barrier_w)
        raise
    released = release(barrier_w)
    if not waiting:
        # after the release: their start (the availability check starts NVML, each process
        # is forked from this one) would otherwise hold the scripts at the barrier, 0.1-0.15 s
        # on an H100 host; each is told the run's start, so smi still reads its energy back
        try:
            _start_listeners(rows)
        except BaseException:
            abort(rows, [])
            raise
    # the runs are created while the scripts run, after the release also where the launch
    # waited for its listeners: each run starts at its script's start (row.started), which
    # a run made during the wait would not know
    recorder.start()
    env_threads = [capture_in_background(row.folder / schema.ENVIRONMENT_DIR) for row in rows]
    supervise(rows, interrupt.event, released)
    for row in rows:
        end_row(row)
    if on_ended is not None:
        on_ended(rows)
    deadline = time.monotonic() + wait_s()
    client = recorder.wait(deadline)
    if client is None and not recorder.outage:
        say(f"could not create the runs in the tracking store: {scrub(str(recorder.error))}")
    spooled = [row for row in rows if not store_row(client, row, env_threads, deadline)]
    return rows if client is not None and store_lost(rows, recorder) else spooled


def store_lost(rows: list[Row], recorder: Recorder) -> bool:
    """Whether the store no longer holds the workload's runs (its SQLite file deleted or
    replaced during the run: the launcher's own connections may have written them into the
    old file). Each row's ``finish.json`` then says they are not stored, so that ``radtrack
    sync`` re-creates them from the spool (radtrack/storecmds/sync.py); ``recorder.lost`` says why."""
    from radtrack.store import runfiles

    ids = [recorder.parent_id, *(row.run_id for row in rows)]
    if not storestate.missing_runs(recorder.uri, ids):
        return False
    recorder.lost = storestate.condition(recorder.uri, recorder.store_id) or "it no longer holds them"
    for row in rows:
        if row.sink is not None and row.sink.dir.is_dir():
            try:
                runfiles.update(row.sink.dir, runfiles.FINISH_FILE, stored=False,
                                store_lost=recorder.lost)
            except OSError:
                pass  # a full disk: sync still finds the run missing and re-creates it
    return True


def _start_listeners(rows: list[Row]) -> None:
    """Keep each row's listeners this host can run (check_listeners), then start them."""
    for row in rows:
        check_listeners(row)
    for row in rows:
        if not row.spec.manual:
            start_row_listeners(row)


def script_env(spool: Path) -> dict[str, str]:
    """What the launcher adds to a script's environment for the store: MLflow's HTTP retry
    settings that ride out a server restart (mlflow_client.script_http_env) and the spool that
    RADTBenchmark logs through (radtrack/script/records.py)."""
    from radtrack.script.records import SCRIPT_SPOOL_ENV, folder_in
    from radtrack.store.mlflow_client import script_http_env

    return {**script_http_env(), SCRIPT_SPOOL_ENV: str(folder_in(spool))}


def spooled_line(rows: list[Row], uri: str, why: str, lost: str = "",
                 since: tuple[int, int] | None = None) -> str:
    """The one line a launch prints when the store kept it from storing everything: the store
    away (``why``), its SQLite file deleted, replaced or read-only (said as such), or no longer
    holding the runs it made (``lost``)."""
    from radtrack.store.tracking import redact

    first = rows[0].spec
    folders = sorted({str(row.sink.dir.parent) for row in rows if row.sink is not None})
    name = f"{first.experiment}-{first.workload}" if first.workload else first.experiment
    kept = (f"the samples, output log and status of {len(rows)} row(s) are spooled in "
            f"{', '.join(folders)}")
    if lost:
        return (f"{name}: tracking store {redact(uri)} does not hold the run(s) any more ({lost}): "
                f"nothing of them is stored; {kept}: run `radtrack sync` to store them in it "
                "again (it re-creates the runs with their times, status, tags, params and metrics)")
    state = storestate.condition(uri, since)
    if state:
        return (f"{name}: tracking store {redact(uri)} could not store them: {state}; {kept}: "
                "run `radtrack sync` once it is writable again to store them")
    return (f"{name}: tracking store {redact(uri)} unreachable "
            f"({why}); {kept}: run `radtrack sync` once the store is back to store them")


def leave_for_sync(rows: list[Row], recorder: Recorder, uri: str,
                   spooled: list[Row]) -> list[tuple[str, str, str]]:
    """The store kept the launcher from storing all of the workload (``spooled`` rows, or its
    runs never created): every row's ``finish.json`` gets the workload run's status, so that
    ``radtrack sync`` closes it as it ended; one line says where the rest is and what to run.
    Returns each row's (status, run id or "", name): the script's true status."""
    statuses = [row.status for row in rows]
    parent_status = ("KILLED" if "KILLED" in statuses else
                     "FAILED" if "FAILED" in statuses else "FINISHED")
    for row in rows:
        if row.sink is not None and row.sink.dir.is_dir():
            write_finish(row, parent_status=parent_status, parent_id=recorder.parent_id)
    syncable = recorder.error is None or bool(recorder.outage)
    why = (recorder.outage or next((r.sink.last_error for r in spooled if r.sink is not None
                                    and r.sink.last_error), "") or scrub(str(recorder.error or ""))[:200])
    if syncable:
        say(spooled_line(rows, uri, why or "no answer", recorder.lost, recorder.store_id))
    out = []
    for row in rows:
        status = row.status
        if not syncable and status == "FINISHED":
            status = "FAILED"  # no run can be made for it (the error above): not done
        where = f"run {row.run_id}" if row.run_id else "its run not created yet"
        if row.run_id and recorder.lost:
            where = f"run {row.run_id} is not in the store: sync re-creates it"
        elif row.run_id and row in spooled:
            where = f"run {row.run_id}, its end not stored yet"
        name = row.name if row.spec.workload else f"{row.spec.experiment} {row.spec.letter}"
        say(f"{name}: {row.status} (exit {row.exit_code}, {where})")
        # a run the store lost is named nowhere else (the sheet's Run cell waits for sync's)
        out.append((status, "" if recorder.lost else row.run_id, row.name))
    return out


def remove_spools(rows: list[Row]) -> None:
    """The workload is stored and closed: its rows' spool folders go."""
    for row in rows:
        if row.sink is not None:
            row.sink.remove()
