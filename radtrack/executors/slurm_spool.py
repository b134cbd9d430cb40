"""What a job left on its node when SLURM (or the OOM killer) ended its launcher before it
stored everything: the spool of each row (samples not yet shipped, telemetry) and the row's
output log, under the job's RADTRACK_HOME (``RADTRACK_JOB_HOME``, default
``/tmp/radtrack-<user>``).

``radtrack status`` and the waiting submitter finish those runs from here when this host
sees that folder (a shared file system, or the node itself), through ``radtrack sync``'s own
function (radtrack/sync_command.py ``sync_folders``: the workload's end step included);
otherwise they name the node and the ``radtrack sync`` command to run there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.store.spool import META_FILE, SPOOL_DIR, hold, holder
from radtrack.vocab import schema

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


def create_uncreated(client: MlflowClient, home: str, job_id: str, log: Callable[[str], None]) -> list[str]:
    """Create the runs of the job's rows whose launcher never could (SLURM ended the job
    before its runs existed: a ``create.json`` naming the job in its row tags, no
    ``meta.json``) from the spool this host sees under ``home``, as ``radtrack sync`` would
    (radtrack/storecmds/syncruns.py); returns their run ids, for :func:`ship_leftovers`. A folder
    whose launcher is alive is left to it; a store that is away or refuses is said, and
    the folder kept for the next call."""
    from radtrack.store import runfiles
    from radtrack.store.handle import StoreHandle
    from radtrack.store.outage import describe
    from radtrack.store.recovery import read_meta
    from radtrack.storecmds.syncruns import create_runs

    root = Path(home) / SPOOL_DIR
    if not job_id or not root.is_dir():
        return []
    groups: dict[str, list[Path]] = {}
    for create in sorted(root.glob(f"*/{runfiles.CREATE_FILE}")):
        folder = create.parent
        record = runfiles.read(folder, runfiles.CREATE_FILE) or {}
        if (folder / META_FILE).exists() or (record.get("row_tags") or {}).get(
                schema.SLURM_JOB_ID) != job_id:
            continue
        groups.setdefault(str(record.get("workload_key") or folder.name), []).append(folder)
    created: list[str] = []
    for folders in groups.values():
        owners = [hold(f) for f in folders]
        try:
            if any(o is None for o in owners):
                continue  # its launcher is alive: it creates them itself
            for line in create_runs(folders, StoreHandle(client.tracking_uri)):
                log(f"job {job_id}: {line}")
            created += [str(read_meta(f)["run_id"]) for f in folders]
        except Exception as exc:  # noqa: BLE001 - store away or refusing: tried again next time
            log(f"job {job_id}: could not create the runs its launcher left in {root} "
                f"({describe(exc)}); tried again on the next 'radtrack status'")
        finally:
            for o in owners:
                if o is not None:
                    o.close()
    return created


def _store_log(client: MlflowClient, run_id: str, folder: Path) -> None:
    """The row's output log (``runs/<key>/output.log``, the key naming its spool folder too),
    when its launcher died before storing it and left no end for sync to store it with."""
    log = folder / schema.LOG_FILE
    if log.is_file() and schema.LOG_ARTIFACT not in {
            a.path for a in client.list_artifacts(run_id, schema.LOGS_DIR)}:
        client.log_artifact(run_id, str(log), schema.LOGS_DIR)


def _workload_folders(home: Path, found: dict[str, Path]) -> list[list[Path]]:
    """The spool folders of ``found``, each with every other spool folder of its workload
    under ``home`` (the same ``workload_key`` in ``create.json``): the end step needs all the
    rows of a workload at once."""
    from radtrack.store import runfiles

    def key(folder: Path) -> str:
        return str((runfiles.read(folder, runfiles.CREATE_FILE) or {}).get("workload_key") or "")

    groups: dict[str, list[Path]] = {}
    if not found:
        return []
    keys = {key(f) or f.name for f in found.values()}
    for folder in sorted(p for p in (home / SPOOL_DIR).iterdir() if p.is_dir()):
        k = key(folder) or folder.name
        if k in keys:
            groups.setdefault(k, []).append(folder)
    return list(groups.values())


def ship_leftovers(client: MlflowClient, home: str, run_ids: list[str],
                   log: Callable[[str], None]) -> Leftover:
    """Finish each of ``run_ids`` whose spool folder this host sees under ``home`` through
    ``radtrack sync``'s own path (radtrack/sync_command.py ``sync_folders``): samples,
    telemetry, the row's end as its launcher recorded it, the workload's end step
    (accounting, code windows, the script's runs; once, ``end_step_done``) when its launcher
    left it, the workload run closed; then the output log when its launcher died before
    storing it. A workload a folder of which a live launcher still holds is left to it."""
    from radtrack.store.handle import StoreHandle
    from radtrack.sync_command import sync_folders

    out = Leftover()
    found = _spool_dirs(Path(home), set(run_ids))
    by_folder = {folder: run_id for run_id, folder in found.items()}
    for group in _workload_folders(Path(home), found):
        busy = next((f for f in group if not _free(f)), None)
        if busy is not None:
            out.kept += [f"spool {f} of run {by_folder[f]} is held by {holder(busy)}, which "
                         "ships it" for f in group if f in by_folder]
            continue
        sync_folders(group, StoreHandle(client.tracking_uri), log)
        for folder in group:
            run_id = by_folder.get(folder)
            if run_id is None:
                continue
            if folder.is_dir():
                out.kept.append(f"spool {folder} of run {run_id} not stored yet; 'radtrack "
                                f"status' tries again, or 'RADTRACK_HOME={home} radtrack sync'")
            else:
                out.shipped.append(run_id)
                _store_log(client, run_id, Path(home) / RUNS_DIR / folder.name)
    return out


def _free(folder: Path) -> bool:
    """No live launcher holds the folder (its owner lock is taken and let go at once)."""
    owner = hold(folder)
    if owner is None:
        return False
    owner.close()
    return True
