"""The launcher's runs in the store: experiments, workload numbers, tags, params, closing."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.spec import RunSpec
from radtrack.store.identity import identity_tags
from radtrack.store.uris import default_artifact_location
from radtrack.vocab import schema
from radtrack.vocab.schema import ROLE

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Experiment


def lookup_experiment(c: MlflowClient, name_or_id: str) -> Experiment | None:
    """The experiment named ``name_or_id``, else numbered so; None when neither exists."""
    exp = c.get_experiment_by_name(name_or_id)
    if exp is None and name_or_id.isdigit():
        from radtrack.store.entities import refusals

        try:
            exp = c.get_experiment(name_or_id)
        except refusals():
            exp = None
    return exp


def experiment_id(c: MlflowClient, uri: str, name_or_id: str) -> str:
    """The id of the experiment named (or numbered) ``name_or_id``, created when missing."""
    exp = lookup_experiment(c, name_or_id)
    if exp is not None:
        if exp.lifecycle_stage == "deleted":
            raise RadtrackError(f"experiment {name_or_id!r} is deleted; restore it or pick another name")
        return exp.experiment_id
    from radtrack.store.entities import refusals

    try:
        return c.create_experiment(name_or_id, artifact_location=default_artifact_location(uri))
    except refusals():
        # another launcher (a SLURM job of the same sheet starting at the same moment)
        # created it between the lookup and here: use theirs
        exp = lookup_experiment(c, name_or_id)
        if exp is None:
            raise
        return exp.experiment_id


def next_workload_number(c: MlflowClient, exp_id: str) -> int:
    """One more than the highest workload number used in the experiment (1 when none)."""
    runs = c.search_runs([exp_id], filter_string=f"tags.`{ROLE}` = '{schema.ROLE_WORKLOAD}'",
                         max_results=5000)
    numbers = [int(r.data.tags.get(schema.WORKLOAD, "0") or 0) for r in runs
               if (r.data.tags.get(schema.WORKLOAD) or "").isdigit()]
    return max(numbers, default=0) + 1


def workload_tags(spec: RunSpec) -> dict[str, str]:
    from radtrack import __version__

    tags = {ROLE: schema.ROLE_WORKLOAD, schema.EXPERIMENT: spec.experiment,
            schema.WORKLOAD: str(spec.workload), schema.VERSION: __version__,
            schema.HOSTNAME: socket.gethostname()}
    if spec.sheet is not None:
        tags[schema.SHEET] = str(spec.sheet)
    return {**tags, **identity_tags(), **slurm_tags()}


def slurm_tags() -> dict[str, str]:
    """``radtrack.slurm.job_id`` when this launcher runs inside a SLURM job (any executor)."""
    job = os.environ.get("SLURM_JOB_ID", "")
    return {schema.SLURM_JOB_ID: job} if job else {}


def row_tags(spec: RunSpec, siblings: list[RunSpec], host: dict[str, str]) -> dict[str, str]:
    from radtrack import __version__

    tags = {
        ROLE: schema.ROLE_ROW,
        schema.EXPERIMENT: spec.experiment,
        schema.WORKLOAD: str(spec.workload),
        schema.LETTER: spec.letter,
        schema.DEVICES: "+".join(spec.devices) or "-",
        schema.COLLOCATION: spec.collocation or "-",
        schema.VERSION: __version__,
        schema.HOSTNAME: socket.gethostname(),
        **host,
    }
    others = [s.run_name or s.default_run_name() for s in siblings if s is not spec]
    if others:
        tags[schema.COLOCATED_WITH] = ",".join(others)
    if spec.row is not None:
        tags[schema.ROW] = str(spec.row)
    if spec.sheet is not None:
        tags[schema.SHEET] = str(spec.sheet)
    # GPU settings the row ran under (studies group runs by them: radtrack.analysis.studies)
    if spec.clocks:
        tags[schema.CLOCKS] = spec.clocks
    if spec.power_limit is not None:
        tags[schema.POWER_LIMIT] = f"{spec.power_limit:g}"
    return {**tags, **identity_tags(), **slurm_tags()}


def row_params(spec: RunSpec, listeners: list[str], command: list[str]) -> dict[str, str]:
    import shlex

    from radtrack.script.params import MAX_PARAM_LEN, parse_script_args

    params = parse_script_args(spec.args)
    params.update({
        "script": str(spec.file),
        "command": shlex.join(command)[:MAX_PARAM_LEN],
        "devices": "+".join(spec.devices) or "-",
        "collocation": spec.collocation or "-",
        "listeners": listeners_param(listeners),
        "interval": str(spec.interval),
        "max_epoch": "" if spec.max_epoch is None else str(spec.max_epoch),
        "max_time": "" if spec.max_time is None else str(spec.max_time),
        "manual": str(spec.manual).lower(),
    })
    return {k: v for k, v in params.items() if v != ""}


def listeners_param(listeners: list[str]) -> str:
    """The ``listeners`` param of a row: its listener entries joined by "+", "none" without."""
    return "+".join(listeners) or "none"


def log_params(c: MlflowClient, run_id: str, params: dict[str, str]) -> None:
    from radtrack.store.entities import Param

    items = [Param(k, v) for k, v in params.items()]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, params=items[i:i + 100])


def set_tags(c: MlflowClient, run_id: str, tags: dict[str, str]) -> None:
    from radtrack.store.entities import RunTag

    items = [RunTag(k, str(v)[:8000]) for k, v in tags.items()]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, tags=items[i:i + 100])


def close_orphaned_parent(c: MlflowClient, row_run_id: str, status: str = "KILLED",
                          lost: bool = True) -> str | None:
    """Close the workload (parent) run of ``row_run_id`` with ``status`` when it is still
    RUNNING but none of its rows is: its launcher died before ending it (``lost``: tagged
    ``launcher_lost``), or left it to ``radtrack sync`` with the status it had decided.
    Returns the parent's id when closed."""
    parent_id = c.get_run(row_run_id).data.tags.get("mlflow.parentRunId")
    if not parent_id:
        return None
    parent = c.get_run(parent_id)
    if parent.info.status != "RUNNING":
        return None
    rows = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.`mlflow.parentRunId` = '{parent_id}'",
                         max_results=5000)
    if any(r.info.status == "RUNNING" for r in rows):
        return None  # a row still runs (or waits for its own sync): close it with that row
    if lost:
        c.set_tag(parent_id, schema.STOPPED_BY, schema.STOPPED_BY_LAUNCHER_LOST)
    c.set_terminated(parent_id, status)
    return parent_id


