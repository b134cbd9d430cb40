"""Decide which workloads of a sheet still need to run, from its Status and Run cells.

A workload runs as a whole (its rows are co-located), so it runs again whole or not at all.
The decision is the Status cells'; the store is only asked to tidy what a crashed launcher
left RUNNING. With the store away (down, or a SQLite file locked: asked without MLflow's
retries), that tidying waits for ``radtrack sync`` (radtrack/store/unchecked.py) and the launch
goes on, said in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from radtrack.sheet import status_word
from radtrack.spec import RunSpec
from radtrack.store.tracking import close_orphaned_parent

if TYPE_CHECKING:
    from mlflow import MlflowClient

PARENT_TAG = "mlflow.parentRunId"
ClientFactory = Callable[[], "MlflowClient"]  # opens the store only when a row needs it


class _Store:
    """The store's lookups for a sheet's earlier runs: opened only when a row needs one, and
    not at all when it is away (probed once, first: radtrack/store/tracking.py store_away);
    the run ids not looked up are kept for ``radtrack sync``."""

    def __init__(self, clients: ClientFactory, uri: str | None) -> None:
        self.clients, self.uri = clients, uri
        self.why: str | None = None if uri else ""  # None: not asked yet
        self.unchecked: list[str] = []

    def away(self) -> str:
        if self.why is None:
            from radtrack.store.tracking import store_away

            self.why = store_away(self.uri or "")
        return self.why

    def went_away(self, exc: BaseException) -> None:
        from radtrack.store.outage import describe

        self.why = describe(exc)

    def report(self, log: Callable[[str], None]) -> None:
        """Keep the run ids not looked up for sync; one line says what that means."""
        if not self.unchecked or not self.uri:
            return
        from radtrack.script.env import radtrack_home
        from radtrack.store.spool import SPOOL_DIR
        from radtrack.store.unchecked import remember
        from radtrack.store.uris import redact

        remember(radtrack_home() / SPOOL_DIR, self.uri, self.unchecked)
        log(f"tracking store {redact(self.uri)} does not answer ({self.why}): the sheet's earlier "
            f"runs {', '.join(dict.fromkeys(self.unchecked))} could not be looked up; the Status "
            "cells decide as usual (RUNNING rows run again, FAILED/KILLED ones only with --rerun, "
            "FINISHED ones are skipped), and `radtrack sync` marks any of those runs a crashed "
            "launcher left RUNNING KILLED once the store is back")


def _name(rows: list[RunSpec]) -> str:
    return f"workload {rows[0].experiment}-{rows[0].workload}"


def _running_in_mlflow(client: MlflowClient, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id).info.status == "RUNNING"
    except MlflowException:
        return False


def _kill_stale(store: _Store, rows: list[RunSpec], log: Callable[[str], None]) -> bool | None:
    """Mark runs a crashed launcher left RUNNING (and their parents) KILLED; True if a row
    was, None when the store is away (not looked up). A parent left RUNNING after
    ``radtrack sync`` closed its rows is closed too."""
    from radtrack.store.outage import is_outage

    asked = [s.run_id for s in rows
             if s.run_id and status_word(s.status) in ("", "RUNNING", "KILLED")]
    if asked and store.away():
        store.unchecked += asked
        return None
    try:
        return _kill_stale_in(store.clients, rows, log)
    except Exception as exc:
        if not is_outage(exc):
            raise
        store.went_away(exc)  # went away since: the rest is not asked either
        store.unchecked += asked
        return None


def _kill_stale_in(clients: ClientFactory, rows: list[RunSpec], log: Callable[[str], None]) -> bool:
    killed: list[str] = []
    parents: list[str] = []
    for s in rows:
        if not s.run_id or status_word(s.status) not in ("", "RUNNING", "KILLED"):
            continue
        from mlflow.exceptions import MlflowException

        client = clients()
        if _running_in_mlflow(client, s.run_id):
            client.set_terminated(s.run_id, status="KILLED")
            killed.append(s.run_id)
        try:
            parent = close_orphaned_parent(client, s.run_id)
        except MlflowException:  # the row's run is not in this store
            parent = None
        if parent:
            parents.append(parent)
    if killed:
        log(f"{_name(rows)}: runs {', '.join(killed + parents)} were still RUNNING in MLflow "
            "(the launcher stopped without closing them); marked KILLED, running it again")
    elif parents:
        log(f"{_name(rows)}: workload run {', '.join(parents)} was still RUNNING in MLflow "
            "(its launcher died); marked KILLED")
    return bool(killed)


def pending_workloads(workloads: list[list[RunSpec]], clients: ClientFactory, rerun: bool,
                      log: Callable[[str], None] = print,
                      uri: str | None = None) -> list[list[RunSpec]]:
    """The workloads to run now, logging one line per decision. ``clients`` opens the store,
    called only when a row's earlier run must be looked up (a sheet never run opens none);
    with ``uri``, the store is probed first and, away, not opened: the decisions stay the
    Status cells', the lookups wait for ``radtrack sync`` (one line says so).

    - every row FINISHED: skipped;
    - runs the sheet marks RUNNING that MLflow still has RUNNING: a crashed launcher; those
      runs and their parent are marked KILLED and the workload runs again;
    - a row RUNNING in the sheet but not in MLflow: interrupted, runs again;
    - any row FAILED or KILLED: runs again only with ``rerun``;
    - otherwise (rows not run yet): runs.
    """
    pending = []
    store = _Store(clients, uri)
    for rows in workloads:
        name = _name(rows)
        words = [status_word(s.status) for s in rows]
        if all(w == "FINISHED" for w in words):
            log(f"{name}: all {len(rows)} rows FINISHED, skipped")
            continue
        stale = _kill_stale(store, rows, log)
        if stale:
            pending.append(rows)
            continue
        if "RUNNING" in words:
            log(f"{name}: marked RUNNING in the sheet " + (
                "(not looked up in MLflow: the store is away), running it again" if stale is None
                else "but not running in MLflow (interrupted), running it again"))
            pending.append(rows)
            continue
        bad = sorted({w for w in words if w in ("FAILED", "KILLED")})
        if bad:
            if rerun:
                log(f"{name}: {'/'.join(bad)} before, running it again (--rerun)")
                pending.append(rows)
            else:
                log(f"{name}: {'/'.join(bad)} before, skipped (use --rerun to run it again)")
            continue
        log(f"{name}: {sum(1 for w in words if w != 'FINISHED')} of {len(rows)} rows not "
            "finished, running it")
        pending.append(rows)
    store.report(log)
    return pending
