"""What a job left on its node when SLURM (or the OOM killer) ended its launcher before it
stored everything: the spool of each row (samples not yet shipped, telemetry) and the row's
output log, under the job's RADTRACK_HOME (``RADTRACK_JOB_HOME``, default
``/tmp/radtrack-<user>``).

``radtrack status`` and the waiting submitter ship it from here when this host sees that
folder (a shared file system, or the node itself), exactly as ``radtrack sync`` would;
otherwise they name the node and the ``radtrack sync`` command to run there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.store import schema
from radtrack.store.spool import META_FILE, SPOOL_DIR, hold, holder

if TYPE_CHECKING:
    from mlflow import MlflowClient

RUNS_DIR = "runs"  # the row folders under RADTRACK_HOME (radtrack/run/experiment.py)


@dataclass
class Leftover:
    """The outcome for one job: runs shipped from here, and what is still on the node."""

    shipped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # lines: why a spool was not shipped

    def note(self, job: str, node: str, home: str, run_ids: list[str]) -> str:
        """One line for the user, '' when nothing is left behind."""
        if self.kept:
            return f"job {job}: " + "; ".join(self.kept)
        if self.shipped or not run_ids:
            return ""
        where = f"node {node}" if node else "its node"
        return (f"job {job}: runs {', '.join(run_ids)} were left RUNNING; their samples and "
                f"output logs may be in {home}/{SPOOL_DIR} on {where}, which this host does not "
                f"see: run 'RADTRACK_HOME={home} radtrack sync' on {where} to store them")


def _spool_dirs(home: Path, run_ids: set[str]) -> dict[str, Path]:
    """run id -> its spool folder under ``home``, for the runs in ``run_ids`` found there."""
    found: dict[str, Path] = {}
    root = home / SPOOL_DIR
    if not run_ids or not root.is_dir():
        return found
    for meta in root.glob(f"*/{META_FILE}"):
        try:
            run_id = json.loads(meta.read_text()).get("run_id", "")
        except (OSError, ValueError):
            continue
        if run_id in run_ids:
            found[run_id] = meta.parent
    return found


def _store_log(client: MlflowClient, run_id: str, folder: Path) -> None:
    """The row's output log, when its launcher died before storing it."""
    log = folder / schema.LOG_FILE
    if not log.is_file():
        return
    have = {a.path for a in client.list_artifacts(run_id, schema.LOGS_DIR)}
    if schema.LOG_ARTIFACT not in have:
        client.log_artifact(run_id, str(log), schema.LOGS_DIR)


def ship_leftovers(client: MlflowClient, home: str, run_ids: list[str]) -> Leftover:
    """Ship the spool (and output log) of each of ``run_ids`` that this host sees under
    ``home``; a spool whose launcher still holds it is left to that launcher."""
    from radtrack.store.sink import Sink

    out = Leftover()
    base = Path(home)
    for run_id, folder in sorted(_spool_dirs(base, set(run_ids)).items()):
        owner = hold(folder)
        if owner is None:
            out.kept.append(f"spool {folder} of run {run_id} is held by {holder(folder)}, "
                            "which ships it")
            continue
        try:
            _store_log(client, run_id, base / RUNS_DIR / folder.name)
            sink = Sink.recover(client, folder)
            if sink.close(retry_for=0):
                out.shipped.append(run_id)
            else:
                out.kept.append(f"spool {folder} of run {run_id} not stored ({sink.last_error}); "
                                f"'RADTRACK_HOME={home} radtrack sync' stores it later")
        finally:
            owner.close()
    return out
