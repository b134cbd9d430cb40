"""The SLURM executor: one batch job per workload, each running radtrack for exactly that
workload on its node (radtrack/executors/slurm_job.py), then wait, or ``--detach``.

Nothing from the sheet reaches a shell: sbatch gets an argument list, and the batch script
is a Python file whose only sheet content is one JSON string literal (``repr``).

Each job asks for the CPUs its rows and their listeners need (``--cpus-per-task``: the
``Cpus`` column or option, else 2 a row plus 1 for the launcher and listeners) and, with
``--mem``, its memory. No secret is written: the job script and the ledger hold the tracking
URI without its password; sbatch hands the full URI to the job in the environment SLURM
propagates (``MLFLOW_TRACKING_URI``), or PostgreSQL's 0600 ``~/.pgpass`` supplies it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from radtrack import own_threads
from radtrack.errors import RadtrackError
from radtrack.executors import slurm_queue as queue
from radtrack.executors.slurm_checks import cpus_per_task, gpu_count
from radtrack.executors.slurm_job import JOB_HOME, default_job_home, spec_to_json
from radtrack.executors.slurm_status import Job, Ledger, refresh
from radtrack.spec import RunSpec
from radtrack.store.handle import StoreHandle

SBATCH_OPTION = {"partition": "--partition", "account": "--account", "time_limit": "--time",
                 "qos": "--qos", "constraint": "--constraint", "mem": "--mem"}
POLL_S = 1.0
CANCEL_WAIT_S = 120.0


@dataclass
class SlurmOptions:
    shared_fs: bool = False
    detach: bool = False
    sbatch_args: list[str] = field(default_factory=list)
    grace: float = 10.0
    poll_s: float = POLL_S


def check_store(uri: str, shared_fs: bool) -> None:
    """Refuse a store only this machine can reach, unless the user says it is shared."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    local = scheme in ("", "file", "sqlite")
    if local and not shared_fs:
        raise RadtrackError(
            f"tracking store {uri} is a file on this machine, which SLURM jobs on other nodes "
            "cannot reach; give --tracking-uri an MLflow server (http://host:5000) or a "
            "database server (postgresql://user@host/db), see docs/deployment.md, or pass "
            "--shared-fs if that path is on a filesystem every node mounts")


def _name(rows: list[RunSpec]) -> str:
    return f"{rows[0].experiment}-{rows[0].workload}"


def _job_name(rows: list[RunSpec]) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", rows[0].experiment)[:40]
    return f"radtrack-{safe}-{rows[0].workload}"


def batch_script(rows: list[RunSpec], uri: str, grace: float, home: str | None) -> str:
    """The job's batch script: Python, with the workload as one JSON string literal; the
    tracking URI without its password (the job takes it from its environment)."""
    from radtrack.store.tracking import launch_id, without_password

    python = sys.executable
    # a row over several nodes: the step that starts a task per node (slurm_nodes.py)
    # one workload on one node: its launcher with the reader of stored runs the co-located
    # figures need, which the entry at the top hands down (radtrack/stored_reader.py)
    entry, call = (("radtrack.executors.slurm_nodes", "main") if rows[0].nodes > 1 else
                   ("radtrack.stored_reader", "slurm_job"))
    if any(c.isspace() for c in python) or len(python) > 200:
        raise RadtrackError(f"the interpreter path {python!r} cannot be a batch script's "
                            "#! line (spaces or too long); install radtrack in a plain path")
    payload = json.dumps({"rows": [spec_to_json(s) for s in rows], "uri": without_password(uri),
                          "grace": grace, "home": home, "launch_id": launch_id()})
    return (f"#!{python}\n"
            "# radtrack: one workload of an experiment sheet (radtrack --executor slurm)\n"
            "import sys\n\n"
            f"from {entry} import {call}\n\n"
            f"sys.exit({call}({payload!r}))\n")


def sbatch_args(rows: list[RunSpec], script: Path, out_dir: Path,
                extra: list[str]) -> list[str]:
    """sbatch's arguments (after ``sbatch --parsable``) for one workload."""
    args = [f"--job-name={_job_name(rows)}", f"--output={out_dir / '%x-%j.out'}"]
    n = gpu_count(rows)
    if n:
        args.append(f"--gres=gpu:{n}")
    args.append(f"--cpus-per-task={cpus_per_task(rows)[0]}")
    if rows[0].nodes > 1:  # a row over several nodes: one task each (slurm_nodes.py)
        args += [f"--nodes={rows[0].nodes}", "--ntasks-per-node=1"]
    for key, option in SBATCH_OPTION.items():
        value = rows[0].executor_options.get(key)
        if value:
            args.append(f"{option}={value}")
    return [*args, *extra, str(script)]


def describe(workloads: list[list[RunSpec]], sheet: Path, opts: SlurmOptions) -> str:
    """--dry-run: the sbatch command of every workload (shown quoted; run without a shell)."""
    import shlex

    folder = Ledger.folder(sheet)
    lines = ["SLURM jobs (one per workload):"]
    for rows in workloads:
        script = folder / f"{_job_name(rows)}.py"
        args = sbatch_args(rows, script, folder, opts.sbatch_args)
        lines.append(f"  {_name(rows)}: {shlex.join(['sbatch', '--parsable', *args])}")
        lines.append(f"    {resources(rows)}")
    return "\n".join(lines) + "\n"


def resources(rows: list[RunSpec]) -> str:
    """What the job asks for, in words (the dry run's second line per workload)."""
    cpus, default = cpus_per_task(rows)
    why = (f"default: 2 per row x {len(rows)} + 1 for the launcher and listeners; "
           "Cpus column or --cpus-per-task to change" if default else "Cpus / --cpus-per-task")
    mem = rows[0].executor_options.get("mem")
    memory = f"memory {mem} (--mem)" if mem else "memory: the partition's default (--mem to set)"
    gpus = gpu_count(rows)
    spread = f" on each of {rows[0].nodes} nodes" if rows[0].nodes > 1 else ""
    return f"{cpus} CPU(s) ({why}), {memory}, {gpus} GPU(s){spread}"


def _say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


def run(workloads: list[list[RunSpec]], store: StoreHandle, sheet: Path, opts: SlurmOptions) -> int:
    """Submit every workload, then wait (or return at once with ``detach``)."""
    queue.require("sbatch", "squeue", "scancel")
    from radtrack.store.tracking import LAUNCH_ID_ENV, launch_id, without_password

    uri, client = store.uri, store.mlflow
    ledger = Ledger.load(sheet)
    ledger.uri = without_password(uri)  # the ledger is a file: no password in it
    # the job's environment (SLURM propagates sbatch's, kept by slurmctld, never in a file
    # radtrack writes): the full URI and this submission's launch id
    job_env = {**own_threads.user_environ(), "MLFLOW_TRACKING_URI": uri, LAUNCH_ID_ENV: launch_id()}
    folder = Ledger.folder(sheet)
    folder.mkdir(parents=True, exist_ok=True)
    home = os.environ.get(JOB_HOME)
    submitted: list[Job] = []
    failed = False
    try:
        for rows in workloads:
            script = folder / f"{_job_name(rows)}.py"
            script.write_text(batch_script(rows, uri, opts.grace, home))
            script.chmod(0o700)
            try:
                job_id = queue.submit(sbatch_args(rows, script, folder, opts.sbatch_args), job_env)
            except RadtrackError as exc:
                _say(f"workload {_name(rows)}: {exc}")
                failed = True
                continue
            job = Job(job_id, rows[0].experiment, rows[0].workload,
                      {str(s.row): s.run_name or s.default_run_name() for s in rows},
                      home=home or default_job_home(),
                      # what finds each row again in a sheet edited before `radtrack status`
                      identity={str(s.row): [s.row_key, s.run_id] for s in rows if s.row_key})
            ledger.add(job)
            ledger.save()  # recorded at once: a later Ctrl-C or crash must not orphan it
            submitted.append(job)
            _say(f"workload {_name(rows)}: submitted as job {job_id} ({len(rows)} row(s), "
                 f"log {folder / (_job_name(rows) + '-' + job_id + '.out')})")
    except KeyboardInterrupt:
        if not opts.detach and submitted:
            _say(f"interrupted while submitting: cancelling job(s) "
                 f"{', '.join(j.job for j in submitted)} (scancel)")
            queue.cancel([j.job for j in submitted])
        ledger.save()
        return 130
    if not submitted:
        ledger.save()
        return 1 if failed else 0
    if opts.detach:
        try:
            _first_refresh(ledger, client, submitted)
        except KeyboardInterrupt:  # detached: the jobs stay, as the ledger says
            ledger.save()
            _say(f"interrupted: {len(submitted)} job(s) stay submitted (--detach); "
                 f"'radtrack status {sheet}' or 'radtrack cancel {sheet}'")
            return 130
        _say(f"{len(submitted)} job(s) submitted; 'radtrack status {sheet}' writes their "
             "states into the sheet")
        return 1 if failed else 0
    # the first refresh too under _wait's Ctrl-C handler: a Ctrl-C there cancels the jobs
    # (it raised KeyboardInterrupt out of MLflow's search before, jobs left queued)
    code = _wait(ledger, client, submitted, opts)
    return code if code else (1 if failed else 0)


def _first_refresh(ledger: Ledger, client, jobs: list[Job]) -> None:
    """The sheet's cells of jobs just submitted (each PENDING until SLURM says more)."""
    refresh(ledger, client, jobs, known={j.job: queue.JobState("PENDING") for j in jobs}, log=_say)


class _Stop:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1


def _wait(ledger: Ledger, client, jobs: list[Job], opts: SlurmOptions) -> int:
    """Poll the jobs, print a progress line on every change, write the sheet back; Ctrl-C
    cancels them with scancel (a second Ctrl-C stops waiting for them to end)."""
    stop = _Stop()
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    last = ""
    cancelled_at: float | None = None
    try:
        _first_refresh(ledger, client, jobs)
        while True:
            try:
                found = queue.states([j.job for j in jobs])
            except queue.QueueError as exc:  # a controller restart: keep waiting
                _say(f"{exc}; asking again in {opts.poll_s:g} s")
                time.sleep(opts.poll_s)
                if stop.count > 1:
                    break
                continue
            line = ", ".join(f"{_short(j)} job {j.job} {found[j.job].state}" for j in jobs)
            if line != last:
                _say(line)
                refresh(ledger, client, jobs, known=found, log=_say)
                last = line
            if all(s.ended for s in found.values()):
                break
            if stop.count and cancelled_at is None:
                live = [j.job for j in jobs if not found[j.job].ended]
                _say(f"interrupted: cancelling job(s) {', '.join(live)} (scancel)")
                complaint = queue.cancel(live)
                if complaint:
                    _say(f"scancel: {complaint}")
                cancelled_at = time.monotonic()
            if cancelled_at is not None and (stop.count > 1 or
                                             time.monotonic() - cancelled_at > CANCEL_WAIT_S):
                _say("not waiting for the cancelled jobs to end; 'radtrack status' updates "
                     "the sheet later")
                break
            time.sleep(opts.poll_s)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if stop.count:
        return 130
    rows_ok = all(found[j.job].state == "COMPLETED" for j in jobs)
    return 0 if rows_ok and _all_finished(ledger.sheet, jobs) else 1


def _short(job: Job) -> str:
    return f"{job.experiment}-{job.workload}"


def _all_finished(sheet: Path, jobs: list[Job]) -> bool:
    from radtrack.sheet import read_sheet, status_word

    specs = read_sheet(sheet, check_host=False)
    lines = {int(line) for j in jobs for line in j.rows}
    return all(status_word(s.status) == "FINISHED" for s in specs if s.row in lines)


def launch_sheet(sheet: Path, defaults: dict, store: StoreHandle, opts: SlurmOptions, *,
                 rerun: bool = False, dry_run: bool = False) -> int:
    """``radtrack sheet.csv --executor slurm``: validate everything, refresh what earlier
    jobs left, then submit the workloads still to run."""
    from radtrack.executors.slurm_checks import check_for_slurm
    from radtrack.plan import format_plan, group_workloads
    from radtrack.resume import pending_workloads
    from radtrack.sheet import read_sheet
    from radtrack.store.tracking import check_experiments, check_reachable

    uri = store.uri
    # The nodes, not this host, have the GPUs: host checks run in each job on its node.
    specs = read_sheet(sheet, defaults, check_host=False)
    check_for_slurm(specs, sheet)
    check_store(uri, opts.shared_fs)
    workloads = group_workloads(specs)
    if dry_run:
        print(format_plan(workloads))
        print(describe(workloads, sheet, opts))
        return 0
    queue.require("sbatch", "squeue", "scancel")
    check_reachable(uri)
    client = store.mlflow
    # as on the local path: a database store the nodes could not use is refused here, before
    # anything is submitted, not inside the jobs
    check_experiments(lambda: client, uri, [w[0].experiment for w in workloads])
    ledger = Ledger.load(sheet)
    if ledger.jobs:
        refresh(ledger, client, log=_say)  # what earlier jobs did, into the sheet, first
        workloads = group_workloads(read_sheet(sheet, defaults, check_host=False))
    live = {(j.experiment, j.workload): j for j in ledger.live()}
    waiting = []
    for rows in workloads:
        job = live.get((rows[0].experiment, rows[0].workload))
        if job is not None:
            _say(f"workload {_name(rows)}: job {job.job} is still {job.state}, skipped "
                 f"('radtrack status {sheet}' follows it)")
        else:
            waiting.append(rows)
    pending = pending_workloads(waiting, lambda: client, rerun, log=_say)
    if not pending:
        return 0
    return run(pending, store, sheet, opts)
