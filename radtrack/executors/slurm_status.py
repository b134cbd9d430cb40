"""A sheet's SLURM jobs: the job ledger, their states, and Status/Run/Job written back.

The ledger ``.<sheet name>.slurm/jobs.json`` next to the sheet records, per workload, the
job id, the sheet rows and the tracking URI; ``radtrack status sheet.csv`` and a later
``radtrack sheet.csv --executor slurm`` read it. Jobs never write the sheet: this module
(in the submitting process, or ``radtrack status``) is its only writer, from the job states
and the MLflow runs the jobs created (tagged ``radtrack.slurm.job_id``).

A job SLURM ended (time limit, preemption, node failure, scancel) leaves its runs KILLED
with ``radtrack.slurm.state`` / ``radtrack.stopped_by = slurm:<STATE>`` tags; runs a dead
node or a killed launcher left RUNNING are closed KILLED here, and the spool their launcher
left on the node is shipped from here when this host sees it, else named
(radtrack/executors/slurm_spool.py). ``radtrack status`` writes the sheet under the sheet's
lock (radtrack/sheet/lock.py); the waiting submitter already holds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.atomic import write_atomic
from radtrack.errors import RadtrackError
from radtrack.executors.slurm_queue import JobState, states
from radtrack.sheet import status_cell
from radtrack.sheet.writeback import write_statuses
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

JOB_TAG = schema.SLURM_JOB_ID
STATE_TAG = schema.SLURM_STATE
REASON_TAG = schema.SLURM_REASON
Log = Callable[[str], None]
# Job states in which SLURM (not the workload) ended the job.
ENDED_BY_SLURM = frozenset({"TIMEOUT", "PREEMPTED", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY",
                            "BOOT_FAIL", "DEADLINE", "REVOKED"})


@dataclass
class Job:
    job: str
    experiment: str
    workload: int
    rows: dict[str, str]  # sheet line (as str, JSON keys) -> run name
    state: str = "PENDING"
    reason: str = ""
    home: str = ""  # the job's RADTRACK_HOME on its node (spool, row folders)
    node: str = ""  # where it ran, once its runs say
    left: list[str] = field(default_factory=list)  # runs whose spool may still be on the node
    # sheet line at submit (as in ``rows``) -> [row identity (sheet/rowmatch.py row_key), the
    # Run cell last written]: what finds the row again in a sheet edited since (the runs'
    # radtrack.row tag keeps the line at submit); a ledger from before it: rows by line
    identity: dict[str, list[str]] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)  # rows found nowhere, named: line -> run id

    @property
    def key(self) -> str:
        return f"{self.experiment}\x1f{self.workload}"


@dataclass
class Ledger:
    sheet: Path
    uri: str = ""
    jobs: dict[str, Job] = field(default_factory=dict)  # Job.key -> newest job of a workload

    @staticmethod
    def folder(sheet: Path) -> Path:
        return sheet.parent / f".{sheet.name}.slurm"

    @property
    def path(self) -> Path:
        return self.folder(self.sheet) / "jobs.json"

    @classmethod
    def load(cls, sheet: Path) -> Ledger:
        ledger = cls(sheet)
        if ledger.path.exists():
            data = json.loads(ledger.path.read_text())
            ledger.uri = data.get("uri", "")
            known = {f.name for f in fields(Job)}  # a newer radtrack's extra keys: ignored
            ledger.jobs = {j.key: j for j in (Job(**{k: v for k, v in d.items() if k in known})
                                              for d in data.get("jobs", []))}
        return ledger

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"sheet": str(self.sheet), "uri": self.uri,
                "jobs": [asdict(j) for j in self.jobs.values()]}
        write_atomic(self.path, json.dumps(data, indent=1))

    def add(self, job: Job) -> None:
        self.jobs[job.key] = job

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if not JobState(j.state).ended]


def _runs_of(client: MlflowClient, job: Job) -> list:
    from radtrack.store.tracking import lookup_experiment

    exp = lookup_experiment(client, job.experiment)
    if exp is None:
        return []
    return client.search_runs([exp.experiment_id], filter_string=f"tags.`{JOB_TAG}` = '{job.job}'",
                              max_results=1000)


def settle(client: MlflowClient, job: Job, state: JobState,
           log: Log = print) -> tuple[dict[int, tuple[str, str]], dict[int, str]]:
    """Bring the job's runs in line with its SLURM state; return the sheet cells to write:
    (row -> (Status cell, run id)), (row -> Job cell)."""
    job.state, job.reason = state.state, state.reason
    runs = _runs_of(client, job)
    if state.ended:
        lost = [r.info.run_id for r in runs if r.info.status == "RUNNING"
                and r.data.tags.get(schema.ROLE) == schema.ROLE_ROW]
        job.node = job.node or next((r.data.tags.get(schema.HOSTNAME, "") for r in runs), "")
        created: list[str] = []
        if not any(r.data.tags.get(schema.ROLE) == schema.ROLE_ROW for r in runs):
            created = _uncreated(client, job, state, log)  # ended before its runs existed
            lost += created
        # the runs' ends, as their launcher left them; runs created here are read again even
        # when storing their spool failed (kept for the next refresh): their parent is closed
        # below like any run SLURM ended, never left RUNNING
        if _leftovers(client, job, lost, log) or created:
            runs = _runs_of(client, job)
    by_row = {r.data.tags.get(schema.ROW): r for r in runs
              if r.data.tags.get(schema.ROLE) == schema.ROLE_ROW}
    killed: set[str] = set()
    if state.ended:
        for r in runs:
            if r.info.status == "FINISHED":  # done before SLURM ended the job
                continue
            tags = {}
            if state.state in ENDED_BY_SLURM:
                tags = {STATE_TAG: state.state,
                        schema.STOPPED_BY: schema.stopped_by_slurm(state.state)}
                if state.reason:
                    tags[REASON_TAG] = state.reason
            if r.info.status == "RUNNING":  # the job died before closing it
                tags.setdefault(schema.STOPPED_BY, schema.stopped_by_slurm(state.state))
                client.set_terminated(r.info.run_id, "KILLED")
                killed.add(r.info.run_id)
            for k, v in tags.items():
                client.set_tag(r.info.run_id, k, v)
    cells: dict[int, tuple[str, str]] = {}
    job_cells: dict[int, str] = {}
    for line, name in job.rows.items():
        run = by_row.get(line)
        if run is not None:
            run_id = run.info.run_id
            name = run.info.run_name or name  # as stored: with a launch suffix, if any
            status = "KILLED" if run_id in killed else run.info.status
            if status == "SCHEDULED":
                status = "RUNNING"
        else:
            run_id = ""
            status = ("PENDING" if state.state == "PENDING" else
                      "RUNNING" if not state.ended and state.state != "UNKNOWN" else
                      "FAILED" if state.state in ("FAILED", "COMPLETED", "UNKNOWN") else "KILLED")
        cells[int(line)] = (status_cell(status, name), run_id)
        job_cells[int(line)] = f"{job.job} {state.state}"
    return cells, job_cells


def _uncreated(client: MlflowClient, job: Job, state: JobState, log: Log) -> list[str]:
    """The runs of a job SLURM ended before they existed, created here from the spool its
    launcher left when this host sees the job's RADTRACK_HOME (radtrack/executors/slurm_spool.py);
    else, for a job SLURM ended, one line naming the node's spool and the sync to run there
    (once; ``job.left`` keeps a marker so later calls look again quietly)."""
    from radtrack.executors.slurm_job import default_job_home
    from radtrack.executors.slurm_spool import create_uncreated

    home = job.home or default_job_home()
    created = create_uncreated(client, home, job.job, log)
    if created:
        job.left = [r for r in job.left if r != UNCREATED]
        return created
    if state.state in ENDED_BY_SLURM and UNCREATED not in job.left:
        job.left.append(UNCREATED)
        where = f"node {job.node}" if job.node else "its node"
        log(f"job {job.job}: {state.state} before its runs existed; if its launcher had started, "
            f"the samples and output logs are in {home}/spool on {where}, which this host does "
            f"not see: run 'RADTRACK_HOME={home} radtrack sync' on {where} to store them")
    return []


UNCREATED = "-"  # in Job.left: a job SLURM ended before its runs existed, spool not seen yet


def _leftovers(client: MlflowClient, job: Job, lost: list[str], log: Log) -> bool:
    """Finish the runs whose launcher died (``lost``: left RUNNING) from the spool it left on
    the node, or name the node and the sync command (once, when found); runs named before
    are tried again quietly on every refresh until this host sees their spool (``job.left``:
    a node's sync leaves no mark in the store). True when a run was finished here."""
    from radtrack.executors.slurm_job import default_job_home
    from radtrack.executors.slurm_spool import ship_leftovers

    runs = [r for r in dict.fromkeys([*job.left, *lost]) if r != UNCREATED]
    if not runs:
        return False
    home = job.home or default_job_home()
    done = ship_leftovers(client, home, runs, log)
    job.left = [r for r in runs if r not in done.shipped] + [r for r in job.left if r == UNCREATED]
    if done.shipped:
        log(f"job {job.job}: finished run(s) {', '.join(done.shipped)} from what the killed "
            f"launcher left in {home}/spool (samples, telemetry, output log)")
    note = done.note(job.job, job.node, home, job.left) if job.left else ""
    if note and (lost or done.kept):
        log(note)
    return bool(done.shipped)


def refresh(ledger: Ledger, client: MlflowClient, jobs: list[Job] | None = None,
            known: dict[str, JobState] | None = None, log: Log = print) -> dict[str, JobState]:
    """Ask SLURM about ``jobs`` (default: all in the ledger), settle their runs, write the
    sheet's Status/Run/Job cells at once and save the ledger; return the states."""
    jobs = list(ledger.jobs.values()) if jobs is None else jobs
    found = known if known is not None else states([j.job for j in jobs])
    cells: dict[int, tuple[str, str]] = {}
    job_cells: dict[int, str] = {}
    for job in jobs:
        c, jc = settle(client, job, found[job.job], log)
        cells.update(c)
        job_cells.update(jc)
    if cells:
        write_back(ledger.sheet, jobs, cells, job_cells, log)
    ledger.save()
    return found


def write_back(sheet: Path, jobs: list[Job], cells: dict[int, tuple[str, str]],
               job_cells: dict[int, str], log: Log) -> None:
    """The jobs' Status/Run/Job ``cells`` (keyed by the lines at submit) into the rows of
    ``sheet`` that were submitted, found by their identity wherever edits since moved them
    (sheet/rowmatch.py, as the local launcher does); the Run cell written becomes part of
    the identity. A row found nowhere is named in one line with its job and run (once per
    run id); the others are written all the same."""
    identities = {int(line): (ident[0], ident[1]) for job in jobs
                  for line, ident in job.identity.items() if int(line) in cells}
    lost = set(write_statuses(sheet, cells, job_cells, identities=identities or None))
    for job in jobs:
        for line, ident in job.identity.items():
            row = int(line)
            if row not in cells:
                continue
            status, run_id = cells[row]
            if row not in lost:
                ident[1] = run_id  # the Run cell it holds now
                job.gone.pop(line, None)
            elif line not in job.gone or job.gone[line] != run_id:
                job.gone[line] = run_id
                log(f"{sheet}:{row}: row {job.rows.get(line, '')} (line {row} when submitted, "
                    f"job {job.job}) is no longer in the sheet (removed, or its cells edited "
                    f"since): its Status {status.split()[0]} and Run "
                    f"{run_id or '(no run yet)'} were not written; the ledger keeps its job"
                    + (", the store its run" if run_id else ""))


def report(sheet: Path, tracking_uri: str | None) -> int | None:
    """``radtrack status sheet.csv`` for a sheet submitted with --executor slurm: refresh its
    Status/Run/Job cells from its jobs and print one line per job; None when its ledger
    records no job (the sheet was not submitted here)."""
    if not Ledger.load(sheet).jobs:
        return None
    ledger = Ledger.load(sheet)
    from radtrack.store.mlflow_client import mlflow_client as client
    from radtrack.store.tracking import check_reachable, with_password

    uri = tracking_uri or with_password(ledger.uri)  # the ledger holds no password
    check_reachable(uri)
    from radtrack.sheet.lock import sheet_lock

    notes: list[str] = []
    # one writer of the sheet and its ledger at a time: a launcher or submitter running
    # this sheet holds the lock (and writes these states itself), and status is refused
    with sheet_lock(sheet):
        ledger = Ledger.load(sheet)  # as it is now that nobody else writes it
        found = refresh(ledger, client(uri), log=notes.append)
    for job in ledger.jobs.values():
        reason = f" ({job.reason})" if job.reason else ""
        print(f"{job.experiment}-{job.workload}: job {job.job} {job.state}{reason}")
    for line in notes:
        print(line)
    return 0 if all(s.state == "COMPLETED" for s in found.values()) else 1


def cancel(sheet: Path) -> int | None:
    """``radtrack cancel sheet.csv``: scancel the sheet's jobs still queued or running (as
    Ctrl-C in the waiting submitter does); their runs end KILLED on the nodes and the next
    ``radtrack status`` writes that back. None when its ledger records no job."""
    ledger = Ledger.load(sheet)
    if not ledger.jobs:
        return None
    jobs = [j.job for j in ledger.jobs.values()]
    found = states(jobs)
    live = [j for j in jobs if not found[j].ended]
    if not live:
        print(f"{sheet}: none of its SLURM jobs ({', '.join(jobs)}) is queued or running")
        return 0
    from radtrack.executors.slurm_queue import cancel as scancel

    complaint = scancel(live)
    if complaint:
        raise RadtrackError(f"scancel {' '.join(live)}: {complaint}")
    print(f"cancelled job(s) {', '.join(live)} (scancel); 'radtrack status {sheet}' writes "
          "their end to the sheet")
    return 0
