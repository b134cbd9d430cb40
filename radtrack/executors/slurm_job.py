"""Inside a SLURM job: run exactly one workload of a sheet on this node, the local way.

The batch script the SLURM executor submits is a Python file that calls ``main`` with the
workload's rows as JSON (embedded as a string literal: no shell, no shared file needed).
Here the rows' Devices, indices within the job's allocation, become the GPUs SLURM gave
the job, the spool and run folders go node-local, and radtrack's local path
(placement, MLflow runs, launch, listeners, sink) runs the workload. The sheet itself is
not written from the node: the submitting process or ``radtrack status`` does that.

When SLURM ends the job (scancel, time limit, preemption) it sends SIGTERM and, ``KillWait``
seconds later, SIGKILL. The launcher traps the SIGTERM and stops the rows in stages (SIGINT,
SIGTERM after ``--grace``, SIGKILL after twice that), then stores them: where that would
not fit in the cluster's ``KillWait`` (``scontrol show config``), the job uses a shorter
grace (:func:`fit_grace`) and says so in its log.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack import own_threads
from radtrack.errors import RadtrackError
from radtrack.script import env as renv
from radtrack.spec import RunSpec

if TYPE_CHECKING:
    from radtrack.postrun.workload_end import StoredReader

JOB_HOME = "RADTRACK_JOB_HOME"  # where jobs spool on their node (default /tmp/radtrack-<user>)
STORE_RESERVE_MAX_S = 5.0  # of KillWait, kept for storing the stopped rows
MIN_GRACE_S = 0.2


def spec_to_json(spec: RunSpec) -> dict[str, Any]:
    d = asdict(spec)
    d["file"] = str(spec.file)
    d["sheet"] = str(spec.sheet) if spec.sheet is not None else None
    return d


def spec_from_json(d: dict[str, Any]) -> RunSpec:
    d = dict(d)
    d["file"] = Path(d["file"])
    d["sheet"] = Path(d["sheet"]) if d.get("sheet") else None
    return RunSpec(**d)


def default_job_home() -> str:
    return os.environ.get(JOB_HOME) or f"/tmp/radtrack-{getpass.getuser()}"


def allocated_devices(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The job's GPUs as this node names them: CUDA_VISIBLE_DEVICES as SLURM set it (indices,
    or UUIDs; relative when SLURM confines devices with cgroups), else SLURM_JOB_GPUS."""
    for key in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"):
        value = environ.get(key, "").strip()
        if value and value != "NoDevFiles":
            return [v.strip() for v in value.split(",") if v.strip()]
    return []


def map_devices(specs: list[RunSpec], allocation: list[str]) -> None:
    """Replace each row's allocation indices by the GPU SLURM gave the job, in place."""
    for s in specs:
        mapped = []
        for d in s.devices:
            i = int(d)
            if i >= len(allocation):
                raise RadtrackError(f"line {s.row}: Devices {'+'.join(s.devices)} needs GPU {i} "
                                    f"of the allocation, but SLURM gave this job "
                                    f"{len(allocation)}: {','.join(allocation) or 'none'}")
            mapped.append(allocation[i])
        s.devices = mapped


def fit_grace(grace: float, kill_wait: float | None) -> tuple[float, str]:
    """The grace to stop rows with inside a job, and a line for the job log when it is not
    ``grace``: SIGINT, SIGTERM after the grace, SIGKILL after twice it, then storing (half of
    KillWait, at most STORE_RESERVE_MAX_S) must all fit in the cluster's KillWait."""
    if kill_wait is None:
        return grace, ""
    reserve = min(kill_wait / 2, STORE_RESERVE_MAX_S)
    if 2 * grace + reserve <= kill_wait:
        return grace, ""
    fitted = max(round((kill_wait - reserve) / 2, 2), MIN_GRACE_S)
    return fitted, (f"--grace {grace:g} s does not fit this cluster's KillWait of {kill_wait:g} s "
                    "(scontrol show config: SLURM's SIGKILL follows its SIGTERM by that much "
                    "when it cancels or times out a job); the rows get a grace of "
                    f"{fitted:g} s instead (SIGINT, SIGTERM after {fitted:g} s, SIGKILL after "
                    f"{2 * fitted:g} s), leaving {kill_wait - 2 * fitted:g} s to store them")


def main(payload: str, read_stored: StoredReader) -> int:
    """Run the workload described by ``payload``; exit code as the local executor's.
    ``read_stored``: the reader of stored runs the co-located figures need, handed down by
    the batch script's entry (radtrack/stored_reader.py ``slurm_job``)."""
    data = json.loads(payload)
    own_threads.limit()  # radtrack's own process (radtrack/own_threads.py); rows get the user's
    os.environ[renv.HOME] = data.get("home") or default_job_home()
    from radtrack.store.tracking import LAUNCH_ID_ENV, with_password

    if data.get("launch_id"):
        os.environ[LAUNCH_ID_ENV] = data["launch_id"]  # every job of one submission: one launch
    uri = with_password(data["uri"])  # the password from the environment SLURM propagated
    from radtrack.store.mlflow_client import radtrack_process

    radtrack_process()
    from radtrack.run.launch import say

    specs = [spec_from_json(d) for d in data["rows"]]
    job = os.environ.get("SLURM_JOB_ID", "?")
    allocation = allocated_devices(os.environ)
    try:
        map_devices(specs, allocation)
        _check_host(specs)
    except RadtrackError as exc:
        say(f"job {job}: {exc}")
        return 2
    first = specs[0]
    say(f"job {job} on {socket.gethostname()}: workload {first.experiment}-{first.workload}, "
        f"{len(specs)} row(s), GPUs {','.join(allocation) or 'none'}; spool in "
        f"{renv.radtrack_home() / 'spool'} (if this job dies, run 'RADTRACK_HOME="
        f"{renv.radtrack_home()} radtrack sync' on this node)")
    from radtrack.executors.slurm_queue import kill_wait
    from radtrack.run.experiment import run_workloads

    grace, note = fit_grace(float(data.get("grace", 10.0)), kill_wait())
    if note:
        say(f"job {job}: {note}")
    from radtrack.store.handle import StoreHandle

    code = run_workloads([specs], StoreHandle(uri), grace=grace, sheet=None,
                         read_stored=read_stored)
    if code == 130:
        say(f"job {job}: ended by a signal (SLURM's on scancel, a time limit or preemption): "
            "the rows were stopped and stored; 'radtrack status' records SLURM's reason")
    return code


def _check_host(specs: list[RunSpec]) -> None:
    """The sheet's host checks, on the node (the submitting host may have no GPU)."""
    from radtrack import gpus
    from radtrack.errors import SheetError
    from radtrack.sheet.host import check_against_host
    from radtrack.sheet.records import Problems

    problems = Problems(Path(str(specs[0].sheet or "sheet")))
    by_uuid = [s for s in specs if any(d.upper().startswith("MIG-") for d in s.devices)]
    check_against_host([s for s in specs if s not in by_uuid], problems, gpus.inventory())
    if problems.items:
        raise SheetError(problems.items)
