"""How a SLURM job's end settles its MLflow runs and sheet cells (radtrack/executors/
slurm_status.py), on a real SQLite store, for the states a single-node test cluster cannot
produce quickly (TIMEOUT, PREEMPTED, NODE_FAIL); the CLI paths are in test_slurm_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from radtrack.executors.slurm_queue import JobState, _clean_state
from radtrack.executors.slurm_status import Job, Ledger, refresh, settle


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store for the module (each test uses its own job ids)."""
    return f"sqlite:///{tmp_path_factory.mktemp('settle') / 'mlflow.db'}"


def _job_with_runs(uri: str, job_id: str, status: str = "RUNNING", row: int = 2):
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("settle") or c.get_experiment(c.create_experiment("settle"))
    parent = c.create_run(exp.experiment_id, tags={"radtrack.role": "workload",
                                                   "radtrack.slurm.job_id": job_id})
    child = c.create_run(exp.experiment_id, run_name="settle-1 A",
                         tags={"radtrack.role": "row", "radtrack.row": str(row),
                               "radtrack.slurm.job_id": job_id,
                               "mlflow.parentRunId": parent.info.run_id})
    if status != "RUNNING":
        c.set_terminated(child.info.run_id, status)
    return c, parent.info.run_id, child.info.run_id


@pytest.mark.parametrize("state,reason", [("TIMEOUT", "TimeLimit"), ("PREEMPTED", ""),
                                          ("NODE_FAIL", "NodeDown"), ("CANCELLED", "")])
def test_a_job_slurm_ended_leaves_its_runs_killed_with_the_reason(store: str, state: str,
                                                                   reason: str) -> None:
    job_id = str(100 + ["TIMEOUT", "PREEMPTED", "NODE_FAIL", "CANCELLED"].index(state))
    c, parent, child = _job_with_runs(store, job_id)
    job = Job(job_id, "settle", 1, {"2": "settle-1 A"})
    cells, jobs = settle(c, job, JobState(state, reason))
    assert cells == {2: ("KILLED settle-1 A", child)} and jobs == {2: f"{job_id} {state}"}
    for run_id in (parent, child):
        run = c.get_run(run_id)
        assert run.info.status == "KILLED"
        assert run.data.tags["radtrack.slurm.state"] == state
        assert run.data.tags["radtrack.stopped_by"] == f"slurm:{state}"
        assert run.data.tags.get("radtrack.slurm.reason", "") == reason


def test_finished_runs_stay_finished_and_live_jobs_are_left_alone(store: str) -> None:
    c, _, child = _job_with_runs(store, "42", status="FINISHED")
    job = Job("42", "settle", 1, {"2": "settle-1 A"})
    assert settle(c, job, JobState("COMPLETED"))[0] == {2: ("FINISHED settle-1 A", child)}
    c2, _, running = _job_with_runs(store, "43")
    job = Job("43", "settle", 1, {"2": "settle-1 A"})
    assert settle(c2, job, JobState("RUNNING"))[0] == {2: ("RUNNING settle-1 A", running)}
    assert c2.get_run(running).info.status == "RUNNING"


@pytest.mark.parametrize("state,status", [("PENDING", "PENDING"), ("RUNNING", "RUNNING"),
                                          ("CANCELLED", "KILLED"), ("FAILED", "FAILED"),
                                          ("UNKNOWN", "FAILED")])
def test_rows_of_a_job_without_runs(store: str, state: str, status: str) -> None:
    from mlflow import MlflowClient

    job = Job("44", "nothing-yet", 3, {"5": "nothing-yet-3 A"})
    cells, jobs = settle(MlflowClient(store), job, JobState(state))
    assert cells == {5: (f"{status} nothing-yet-3 A", "")} and jobs == {5: f"44 {state}"}


def test_refresh_writes_status_run_and_job_cells(store: str, tmp_path: Path) -> None:
    c, _, child = _job_with_runs(store, "45", status="FINISHED", row=3)
    sheet = tmp_path / "s.csv"
    sheet.write_text("# kept\nExperiment,Workload,Status,Run,Devices,Collocation,File,Listeners,"
                     "Params,Job\nsettle,1,,,,-,x.py,none,,\n")
    ledger = Ledger(sheet, store, {})
    ledger.add(Job("45", "settle", 1, {"3": "settle-1 A"}))
    refresh(ledger, c, known={"45": JobState("COMPLETED")})
    assert sheet.read_text().splitlines()[2] == \
        f"settle,1,FINISHED settle-1 A,{child},,-,x.py,none,,45 COMPLETED"
    assert Ledger.load(sheet).jobs[ledger.jobs["settle\x1f1"].key].state == "COMPLETED"


def test_sacct_state_words() -> None:
    assert _clean_state("CANCELLED by 1000") == "CANCELLED"
    assert _clean_state("COMPLETED+") == "COMPLETED"
    assert _clean_state("") == "UNKNOWN"
