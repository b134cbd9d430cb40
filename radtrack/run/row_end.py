"""The end of a row: listeners stopped, output drained, its status decided, everything stored."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from radtrack.run import cost
from radtrack.run.listen import STOP_GRACE_S, hello_tags
from radtrack.run.procs import drain
from radtrack.run.row_status import decide_status
from radtrack.run.start import say, stop_row_listeners
from radtrack.store.row_run_close import finish_run, store_row_params
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.run.rows import Row


def end_row(row: Row) -> None:
    """Stop listeners, drain output, decide the status and the listener tags (no store I/O)."""
    assert row.proc is not None and row.sink is not None
    stop_row_listeners(row)
    drain(row, say)  # bounded: what the script's tree left running is stopped and named
    row.exit_code = row.proc.returncode
    row.status = decide_status(row.stopped_by, row.exit_code)
    for lp in row.lprocs:
        key = schema.listener_tag(lp.name)
        if lp.gave_up:
            continue
        if lp.killed_at_stop:  # it hung at the end: its readings since its last flush lost
            row.tags[key] = (f"killed at stop: it did not end within {STOP_GRACE_S:g} s of being "
                             f"asked (hung); its last line came {max(0.0, time.monotonic() - lp.last_line):.0f} s "
                             "before its end")
            say(f"{row.spec.letter}: listener {lp.name} {row.tags[key]}")
        if key not in row.tags:
            row.tags[key] = "ok" if lp.ready.is_set() else f"failed: {lp.failure or 'no output'}"
        row.tags.update(hello_tags(lp.name, row.sink.hello(lp.name)))
    row.tags[schema.EXIT_CODE] = str(row.exit_code)
    row.tags.update(row.sink.drops.tags())  # samples a full spool disk kept out
    if row.stopped_by:
        row.tags[schema.STOPPED_BY] = row.stopped_by


def store_row(client: MlflowClient | None, row: Row, env_threads: list[threading.Thread],
              deadline: float | None = None) -> bool:
    """Ship the rest of the row's samples and of the script's RADTBenchmark values, its traces
    and summaries, then its tags, params, duration, log, environment, profiles and status,
    riding out a store that is away until ``deadline`` (time.monotonic(); default: no wait).
    The row's spool keeps ``finish.json`` (how the run ended) until the workload is closed
    (the launcher removes it then): what could not be stored stays there for ``radtrack
    sync``, and False is returned (the launcher says so once for the workload)."""
    from radtrack.store.outage import describe, is_outage, retrying

    assert row.sink is not None
    deadline = time.monotonic() if deadline is None else deadline
    write_finish(row)
    meter = cost.Meter(row)  # what watching the row cost (radtrack/run/cost.py)
    # the summaries go with the end's one call below (one round trip to a server fewer)
    stored = row.sink.close(retry_for=max(0.0, deadline - time.monotonic()), remove=False,
                            defer_summaries=True)
    summaries = list(row.sink.summary_points or [])
    meter.closed()
    for what in row.sink.refused:
        say(f"{row.spec.letter}: MLflow refused a value the script logged: {what}")
    if client is None or not row.run_id or not stored:
        keep_cost(row, meter)  # radtrack sync stores it with the run's end
        return False
    for t in env_threads:  # before the transaction below: it holds the store's write lock
        t.join(timeout=60)
    recorded: list[bool] = []

    def end() -> None:  # the end and its cost: one call to a server, one transaction (SQLite)
        try:
            spent = cost.points(row, meter)
        except Exception as exc:  # noqa: BLE001 - the cost is a note about the run, not its data
            cost.said(row, exc)
            spent = []
        store_end(client, row, env_threads, [*summaries, *spent])
        recorded.append(True)

    try:
        retrying(lambda: _in_one(client, end), deadline)
    except Exception as exc:
        if is_outage(exc):
            row.sink.last_error = describe(exc)
            return False
        say(f"{row.spec.letter}: could not store the end of run {row.run_id}: {describe(exc)}")
        try:  # whatever else failed, the run must not stay RUNNING
            if summaries:  # they were to go with the end: stored on their own
                for i in range(0, len(summaries), 1000):
                    client.log_batch(row.run_id, metrics=summaries[i:i + 1000])
            client.set_terminated(row.run_id, row.status)
        except Exception:  # noqa: BLE001 - sync ends it from finish.json
            return False
    if not recorded:
        cost.record(client, row, meter)
    write_finish(row, stored=True)  # only the workload run is left to close
    return True


def _in_one(client: MlflowClient, fn: Callable[[], None]) -> None:
    """``fn``'s store calls as one transaction where the store allows (one sync to disk
    for a SQLite store: radtrack/store/handle.py one_transaction)."""
    from radtrack.store.handle import one_transaction

    with one_transaction(client):
        fn()


def keep_cost(row: Row, meter: cost.Meter) -> None:
    """What watching the row cost (``summary/monitoring/*``), kept in its ``finish.json`` for
    ``radtrack sync`` when the launcher could not store the row."""
    from radtrack.store import runfiles

    assert row.sink is not None
    start, end = row.started, row.ended or time.time()
    try:
        values = meter.values(end - start if start else 0.0)
        runfiles.update(row.sink.dir, runfiles.FINISH_FILE, monitoring=values)
    except (OSError, ValueError):
        pass  # a full disk: the run goes without it


def write_finish(row: Row, **extra: object) -> None:
    """The row's ``finish.json`` in its spool: how it ended, for ``radtrack sync``."""
    from radtrack.store import runfiles

    assert row.sink is not None
    released = row.folder / "released"
    try:
        start = row.started or (float(released.read_text()) if released.exists() else 0.0)
    except (OSError, ValueError):
        start = 0.0
    try:
        runfiles.update(row.sink.dir, runfiles.FINISH_FILE, run_id=row.run_id,
                        status=row.status, exit_code=row.exit_code, tags=row.tags,
                        params=row.params, start=start, end=row.ended or time.time(),
                        folder=str(row.folder), metrics=row.sink.drops.metrics(), **extra)
    except OSError as exc:  # a full disk: the launcher still stores the end itself
        say(f"{row.spec.letter}: could not keep how the run ended for radtrack sync: {exc}")


def store_end(client: MlflowClient, row: Row, env_threads: list[threading.Thread],
              extra: list[tuple[str, float, int, int]] | None = None) -> None:
    """Params, tags, duration and ``extra`` points (the monitoring cost), log, environment,
    profiles, then the status (idempotent: run again after a store outage, it stores the same)."""
    for t in env_threads:
        t.join(timeout=60)
    name = finish_run(client, row.run_id, row.folder, row.params, row.tags, row.status,
                      row.started, row.ended, [*row.sink.drops.metrics(), *(extra or [])])
    row.stored_name = name or ""  # the closing line's name without another read


__all__ = ["decide_status", "end_row", "finish_run", "store_end", "store_row", "store_row_params",
           "write_finish"]
