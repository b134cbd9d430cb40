"""Decide which workloads of a sheet still need to run, from its Status and Run cells.

A workload runs as a whole (its rows are co-located), so it runs again whole or not at all.
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


def _name(rows: list[RunSpec]) -> str:
    return f"workload {rows[0].experiment}-{rows[0].workload}"


def _running_in_mlflow(client: MlflowClient, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id).info.status == "RUNNING"
    except MlflowException:
        return False


def _kill_stale(clients: ClientFactory, rows: list[RunSpec], log: Callable[[str], None]) -> bool:
    """Mark runs a crashed launcher left RUNNING (and their parents) KILLED; True if a row
    was. A parent left RUNNING after ``radtrack sync`` closed its rows is closed too."""
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
                      log: Callable[[str], None] = print) -> list[list[RunSpec]]:
    """The workloads to run now, logging one line per decision. ``clients`` opens the store,
    called only when a row's earlier run must be looked up (a sheet never run opens none).

    - every row FINISHED: skipped;
    - runs the sheet marks RUNNING that MLflow still has RUNNING: a crashed launcher; those
      runs and their parent are marked KILLED and the workload runs again;
    - a row RUNNING in the sheet but not in MLflow: interrupted, runs again;
    - any row FAILED or KILLED: runs again only with ``rerun``;
    - otherwise (rows not run yet): runs.
    """
    pending = []
    for rows in workloads:
        name = _name(rows)
        words = [status_word(s.status) for s in rows]
        if all(w == "FINISHED" for w in words):
            log(f"{name}: all {len(rows)} rows FINISHED, skipped")
            continue
        if _kill_stale(clients, rows, log):
            pending.append(rows)
            continue
        if "RUNNING" in words:
            log(f"{name}: marked RUNNING in the sheet but not running in MLflow (interrupted), "
                "running it again")
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
    return pending
