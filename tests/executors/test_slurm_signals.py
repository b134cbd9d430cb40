"""A job SLURM ends (scancel, time limit) while its script is slow to stop, on a cluster
whose KillWait (5 s in tests/slurm_cluster.py) is shorter than ``--grace``: the job fits its
grace into KillWait and says so in its log, the rows end KILLED with SLURM's reason in the
sheet and in MLflow, nothing stays in the node's spool, a plain resubmission skips them
(nothing submitted) and ``--rerun`` runs them again in a new job.
``radtrack sheet.csv --executor slurm`` and ``radtrack status`` as subprocesses against the
tests' single-node SLURM, into SQLite on a path declared shared."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_cluster import wait_for
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
# the script traps SIGINT and then 'checkpoints' for 8 s: longer than KillWait. Two workloads,
# one job each: SLURM cancels one (scancel) and times the other out.
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Job\n"
ROW = "{exp},1,,,,-,slow_to_stop.py,top,{pid} {release} 8,\n"
EXPS = ("cancelled", "timedout")


def _setup(tmp_path: Path, cluster) -> tuple[Path, dict[str, Path], Path, dict[str, str]]:
    shutil.copy(SCRIPTS / "slow_to_stop.py", tmp_path / "slow_to_stop.py")
    pids, release = {exp: tmp_path / f"pid-{exp}" for exp in EXPS}, tmp_path / "release"
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(HEADER + "".join(ROW.format(exp=exp, pid=pids[exp], release=release)
                                      for exp in EXPS))
    env = {**cluster.env, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "RADTRACK_JOB_HOME": str(tmp_path / "jobhome"),
           "RADTRACK_HOME": str(tmp_path / ".radtrack"), "PYTHONUNBUFFERED": "1"}
    return sheet, pids, release, env


def _rows(sheet: Path) -> dict[str, dict[str, str]]:
    """Experiment -> its row's cells."""
    lines = sheet.read_text().splitlines()
    rows = [{k.strip(): (v or "").strip() for k, v in r.items()} for r in csv.DictReader(lines)]
    return {r["Experiment"]: r for r in rows}


def _row_run(env: dict[str, str], exp: str):
    from mlflow import MlflowClient

    c = MlflowClient(env["MLFLOW_TRACKING_URI"])
    runs = c.search_runs([c.get_experiment_by_name(exp).experiment_id])
    return c, [r for r in runs if r.data.tags["radtrack.role"] == "row"]


def _job_log(tmp_path: Path, job: str) -> str:
    return "".join(f.read_text() for f in (tmp_path / ".sheet.csv.slurm").glob(f"*-{job}.out"))


def _spooled(tmp_path: Path) -> list[Path]:
    spool = tmp_path / "jobhome" / "spool"
    return [d for d in spool.iterdir() if d.is_dir()] if spool.is_dir() else []


def _assert_stopped_in_time(c, run, tmp_path: Path, state: str) -> None:
    """The job's launcher stopped the row (SIGINT, then SIGTERM after the fitted grace) and
    stored it before SLURM's SIGKILL: exit code, output log and samples are in MLflow."""
    tags = run.data.tags
    assert run.info.status == "KILLED"
    assert tags["radtrack.slurm.state"] == state and tags["radtrack.stopped_by"] == f"slurm:{state}"
    assert tags.get("radtrack.exit_code") == "-15", tags  # SIGTERM mid-checkpoint
    log = Path(c.download_artifacts(run.info.run_id, "logs/output.log", str(tmp_path / state)))
    assert "SIGINT: checkpointing for 8 s" in log.read_text()
    assert c.get_metric_history(run.info.run_id, "system/top/cpu_pct") or \
        c.get_metric_history(run.info.run_id, "top/cpu_pct")
    assert not _spooled(tmp_path), _spooled(tmp_path)  # shipped by the job itself


def test_scancel_and_time_limit_with_grace_longer_than_killwait(slurm_cluster,
                                                                tmp_path: Path) -> None:
    """While the submitter waits: one job scancelled, the other past its time limit."""
    sheet, pids, release, env = _setup(tmp_path, slurm_cluster)
    args = (str(sheet), "--executor", "slurm", "--shared-fs", "--grace", "10")
    proc = subprocess.Popen([sys.executable, "-m", "radtrack", *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = None
    try:
        wait_for(lambda: all(p.exists() for p in pids.values()), 120, "the jobs' scripts to start")
        # the waiting submitter holds the sheet (its jobs wait for `release`): status leaves
        # the sheet and the ledger to it
        status = subprocess.Popen([sys.executable, "-m", "radtrack", "status", str(sheet)],
                                  env={**os.environ, **env}, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        wait_for(lambda: sum((d / "meta.json").exists() for d in _spooled(tmp_path)) == 2, 60,
                 "the rows' runs to be created")
        _, s_err = status.communicate(timeout=120)
        assert status.returncode == 2 and f"is being run by pid {proc.pid}" in s_err, s_err
        jobs = {exp: r["Job"].split()[0] for exp, r in _rows(sheet).items()}
        assert jobs["cancelled"] != jobs["timedout"]
        assert slurm_cluster.run("scancel", jobs["cancelled"]).returncode == 0
        # the job's end moved to 2 s from now (its time limit shortened to match: a limit in
        # minutes, TimeLimit=1, would end it only a minute after its start): slurmctld times
        # it out at its next time-limit check (every 30 s), reason TimeLimit
        end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 2))
        p = slurm_cluster.run("scontrol", "update", f"JobId={jobs['timedout']}", f"EndTime={end}")
        assert p.returncode == 0, p.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        for p in (proc, status):
            if p is not None and p.poll() is None:
                p.kill()
    assert proc.returncode == 1, err
    job_c, job_t = jobs["cancelled"], jobs["timedout"]
    assert f"cancelled-1 job {job_c} CANCELLED" in err and f"timedout-1 job {job_t} TIMEOUT" in err, err
    log = _job_log(tmp_path, job_c)
    assert "--grace 10 s does not fit this cluster's KillWait of 5 s" in log, log
    assert "a grace of 1.25 s instead" in log and "ended by a signal" in log, log
    assert "a grace of 1.25 s instead" in _job_log(tmp_path, job_t)
    rows = _rows(sheet)
    for exp, job, state in (("cancelled", job_c, "CANCELLED"), ("timedout", job_t, "TIMEOUT")):
        c, runs = _row_run(env, exp)
        assert rows[exp]["Status"].startswith(f"KILLED {exp}-1 A"), (rows, _job_log(tmp_path, job))
        assert rows[exp]["Job"] == f"{job} {state}"
        assert len(runs) == 1 and rows[exp]["Run"] == runs[0].info.run_id
        _assert_stopped_in_time(c, runs[0], tmp_path, state)
        if state == "TIMEOUT":
            assert runs[0].data.tags["radtrack.slurm.reason"] == "TimeLimit"
    first = {exp: r["Run"] for exp, r in rows.items()}

    s = radtrack_cli("status", str(sheet), env=env)
    assert s.returncode == 1 and f"cancelled-1: job {job_c} CANCELLED" in s.stdout, s.stdout + s.stderr
    assert f"timedout-1: job {job_t} TIMEOUT (TimeLimit)" in s.stdout, s.stdout
    assert not (tmp_path / "sheet.csv.lock").exists()  # status released the sheet's lock

    skipped = radtrack_cli(*args, env=env)
    assert skipped.returncode == 0 and "KILLED before, skipped (use --rerun" in skipped.stderr
    assert {exp: r["Job"] for exp, r in _rows(sheet).items()} == {
        "cancelled": f"{job_c} CANCELLED", "timedout": f"{job_t} TIMEOUT"}  # nothing submitted
    release.write_text("go")
    again = radtrack_cli(*args, "--rerun", env=env, timeout=240)
    assert again.returncode == 0, again.stderr
    for exp, row in _rows(sheet).items():
        assert row["Status"].startswith(f"FINISHED {exp}-1 A") and row["Run"] != first[exp]
        assert row["Job"].endswith(" COMPLETED") and row["Job"].split()[0] not in (job_c, job_t)


@pytest.mark.parametrize("grace,kill_wait,fitted", [(10, None, 10), (10, 30, 10), (10, 5, 1.25),
                                                     (2, 5, 1.25), (1, 5, 1), (10, 60, 10),
                                                     (30, 60, 27.5), (10, 0, 0.2)])
def test_grace_fits_killwait(grace: float, kill_wait: float | None, fitted: float) -> None:
    from radtrack.executors.slurm_job import fit_grace

    got, note = fit_grace(grace, kill_wait)
    assert got == fitted and bool(note) == (fitted != grace)
