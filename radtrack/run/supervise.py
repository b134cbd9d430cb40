"""Watch a released workload until every row's process has ended: signals, limits, listeners.

Each row's span ends with its own process: the supervisor ends its sink's span then (no
sample after it is stored on the run: radtrack/store/spool.py) and stops its listeners at
once, in the background, while its partners run on; their final readings close the span.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from radtrack.run.start import say, start_row_listeners, stop_row_listeners
from radtrack.run.stopping import reap_group
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.run.rows import Row

PROGRESS_EVERY_S = 30.0
TICK_S = 0.05


def supervise(rows: list[Row], stop: threading.Event, released: float,
              clock: Callable[[], float] = time.time, tick: float = TICK_S) -> None:
    """Until every row's process has ended: forward a stop request (``stop`` set by the
    launcher's signal handler), stop a row at its MaxTime, follow --manual control files,
    note listener restarts, print progress every PROGRESS_EVERY_S; each row's span starts
    at its ``started`` and ends with its process, its listeners stopped then (end_span).
    Returns once every row's listeners have stopped too."""
    last_progress = time.monotonic()
    running = set(range(len(rows)))
    for row in rows:
        if row.started and row.sink is not None and not row.spec.manual:
            row.sink.set_start(as_told(row.started))
    stopping: list[threading.Thread] = []
    try:
        _watch(rows, running, stop, released, clock, tick, stopping, last_progress)
    finally:
        for t in stopping:
            t.join()


def _watch(rows: list[Row], running: set[int], stop: threading.Event, released: float,
           clock: Callable[[], float], tick: float, stopping: list[threading.Thread],
           last_progress: float) -> None:
    while running:
        if stop.is_set():
            for i in running:
                rows[i].stopped_by = rows[i].stopped_by or "signal"
                rows[i].stopper.request()
        for i in list(running):
            row = rows[i]
            manual_control(row)
            for lp in row.lprocs:
                change = lp.check()
                if change:
                    row.tags[schema.listener_tag(lp.name)] = change
                    say(f"{row.spec.letter}: listener {lp.name} {change}")
            if row.spec.max_time is not None and not row.stopped_by:
                if clock() - (row.started or released) >= row.spec.max_time * 60:
                    row.stopped_by = "max_time"
                    say(f"{row.spec.letter}: max time {row.spec.max_time} min reached, stopping")
                    row.stopper.request()
            row.stopper.tick()
            if row.proc.poll() is not None:
                stopping += end_span(row, clock)
                running.discard(i)
                reap_group(row.proc.pid)
        if time.monotonic() - last_progress >= PROGRESS_EVERY_S and running:
            last_progress = time.monotonic()
            progress(rows, running, released, clock())
        if running:
            time.sleep(tick)


def as_told(start: float) -> float:
    """The run's start as its listeners are told it (``--since``, to the microsecond:
    ListenerLaunch): smi's 0 J reading at the start then lies in the span, not a hair before."""
    return float(f"{start:.6f}")


def end_span(row: Row, clock: Callable[[], float] = time.time) -> list[threading.Thread]:
    """The row's process ended: its span ends now (or where --manual's control file ended
    it), and its listeners stop in a thread of their own (returned, to be joined) so that
    the partners' supervision goes on meanwhile."""
    if row.sink is not None:
        row.ended = row.sink.set_end(row.ended or clock)
    else:
        row.ended = row.ended or clock()
    if row.launcher_cpu0 is not None and row.launcher_cpu1 is None:
        row.launcher_cpu1 = time.process_time()
    if not row.listening:
        return []
    t = threading.Thread(target=stop_row_listeners, args=(row,), daemon=True,
                         name=f"stop-listeners-{row.spec.letter}")
    t.start()
    return [t]


def manual_control(row: Row) -> None:
    """--manual: listeners and timing follow the script's RADTBenchmark context."""
    if not row.spec.manual:
        return
    control = row.folder / "control"
    if not row.listening and not row.started and (control / "start").exists():
        row.started = float((control / "start").read_text() or time.time())
        row.launcher_cpu0 = time.process_time()
        if row.sink is not None:
            row.sink.set_start(as_told(row.started))
        start_row_listeners(row)
    if row.listening and (control / "stop").exists():
        row.ended = float((control / "stop").read_text() or time.time())
        if row.sink is not None:
            row.sink.set_end(row.ended)
        stop_row_listeners(row)


def progress(rows: list[Row], running: set[int], released: float, now: float) -> None:
    elapsed = now - released
    done = len(rows) - len(running)
    limits = [r.spec.max_time * 60 for r in rows if r.spec.max_time is not None]
    eta = f", ETA {hms(max(max(limits) - elapsed, 0))}" if limits else ""
    name = rows[0].spec.default_run_name().rsplit(" ", 1)[0]
    say(f"{name}: {len(running)} running, {done}/{len(rows)} finished, elapsed {hms(elapsed)}{eta}")


def hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
