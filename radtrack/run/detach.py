"""The launcher's side of the detached end: make the launch durable, then store in the background.

Called once every script of the launch's last workload has ended (their listeners stopped,
their output drained, their statuses decided: radtrack/run/row_end.py end_row). Before the
front (radtrack/run/front.py) gives the shell back, what ``radtrack sync`` needs to finish
the runs alone must be on disk: each row's ``create.json`` (how to create its runs,
written by the Recorder thread), its ``finish.json`` with the true status, exit code and
the workload run's status (radtrack/store/runfiles.py), and its spool, fsynced. Then the
launcher registers its pid file (radtrack/run/background_launchers.py), writes what it prints from
now on to ``end.log`` in the workload's run folder, leaves the terminal's session and tells
the front; it goes on exactly as an attached launcher does (MLflow runs, samples, Parquet
traces, summaries, accounting, statuses, the sheet's write-back under its lock).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.run import background_launchers, front
from radtrack.run.row_end import write_finish
from radtrack.run.start import say
from radtrack.script import env as renv
from radtrack.store import runfiles

if TYPE_CHECKING:
    from radtrack.run.record import Recorder
    from radtrack.run.rows import Interrupt, Row

CREATE_WAIT_S = 10.0  # for the Recorder's create.json (written first thing, before MLflow)
LOG_NAME = "end.log"

_finisher: list[background_launchers.Finisher] = []


def after_rows(rows: list[Row], recorder: Recorder, interrupt: Interrupt, worst: int) -> bool:
    """Detach if a front waits and it is safe; ``worst``: the exit code of the launch's
    earlier workloads. True when the launcher now runs in the background."""
    if not front.armed() or interrupt.event.is_set():
        return False  # interrupted: the user waits for the stop, as without the front
    if recorder.error is not None and not recorder.outage:
        return False  # the runs cannot be made: said in the terminal, as without the front
    if not _await_create_files(rows, recorder):
        return False
    statuses = [row.status for row in rows]
    parent_status = ("KILLED" if "KILLED" in statuses else
                     "FAILED" if "FAILED" in statuses else "FINISHED")
    for row in rows:
        write_finish(row, parent_status=parent_status)
        if row.sink is None or not (row.sink.dir / runfiles.FINISH_FILE).exists():
            return False  # a full disk: stay attached (the end is stored as it always is)
    try:
        for row in rows:
            _fsync_tree(row.sink.dir)
    except OSError as exc:
        say(f"not storing in the background: the spool could not be synced to disk ({exc})")
        return False
    code = max(worst, 0 if parent_status == "FINISHED" else 1)
    folder = recorder.scratch if recorder.scratch is not None else rows[0].folder
    log = folder / LOG_NAME
    try:
        _finisher.append(background_launchers.register(renv.radtrack_home(), log,
                                            [str(row.sink.dir) for row in rows]))
        _redirect(log)
    except OSError as exc:
        say(f"not storing in the background: {exc}")
        return False
    try:
        os.setsid()  # off the terminal: its Ctrl-C and hang-up are the next command's
    except OSError:
        pass  # a process group leader already (started as one): no terminal signals reach it
    ended = ", ".join(f"{row.spec.letter} {row.status} (exit {row.exit_code})" for row in rows)
    say(f"detached at {time.strftime('%Y-%m-%d %H:%M:%S')}: {ended}; storing in the background")
    front.tell(code, f"[radtrack] {rows[0].spec.experiment}: {ended}; storing the run(s) in the "
                     f"background (pid {os.getpid()}, log {log}); `radtrack sync` finishes "
                     "them if that is interrupted")
    return True


def done() -> None:
    """The background end is over: the pid file goes (readers stop waiting)."""
    while _finisher:
        background_launchers.unregister(_finisher.pop())


def _await_create_files(rows: list[Row], recorder: Recorder) -> bool:
    """Until every row's create.json exists (the Recorder writes them before anything else)."""
    deadline = time.monotonic() + CREATE_WAIT_S
    while True:
        if all(row.sink is not None and (row.sink.dir / runfiles.CREATE_FILE).exists()
               for row in rows):
            return True
        if time.monotonic() > deadline or not recorder._thread.is_alive():  # it gave up
            return False
        time.sleep(0.005)


def _fsync_tree(folder: Path) -> None:
    """Every file under ``folder`` and the folders themselves, on disk."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _redirect(log: Path) -> None:
    """stdout and stderr to ``log`` from now on, stdin from /dev/null: the terminal (or the
    pipe a caller reads to its end) is the front's alone."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.dup2(null, 0)
    finally:
        os.close(fd)
        os.close(null)
