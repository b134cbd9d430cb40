"""Which workloads run again, decided from sheet statuses and a real SQLite MLflow store."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import made_store

from radtrack.plan import group_workloads
from radtrack.resume import pending_workloads
from radtrack.spec import RunSpec


def spec(wl: int, status: str = "", run_id: str = "") -> RunSpec:
    return RunSpec(experiment="e", workload=wl, file=Path("/x.py"), status=status, run_id=run_id)


@pytest.fixture
def client(store) -> MlflowClient:
    return MlflowClient(made_store(store))


def make_runs(client: MlflowClient, n: int) -> tuple[str, list[str]]:
    """A parent run and n nested child runs, all left RUNNING as by a crashed launcher."""
    exp = client.create_experiment("e")
    parent = client.create_run(exp, run_name="e-1").info.run_id
    children = [client.create_run(exp, run_name=f"e-1 {chr(65 + i)}",
                                  tags={"mlflow.parentRunId": parent}).info.run_id
                for i in range(n)]
    return parent, children


def decide(workloads, client, rerun=False):
    lines: list[str] = []
    out = pending_workloads(workloads, lambda: client, rerun, log=lines.append)
    return [rows[0].workload for rows in out], lines


def test_finished_failed_and_fresh_workloads(client):
    workloads = group_workloads([
        spec(1, "FINISHED e-1 A", "r1"), spec(1, "FINISHED e-1 B", "r2"),
        spec(2, "FINISHED e-2 A", "r3"), spec(2, "FAILED e-2 B", "r4"),
        spec(3, "KILLED e-3 A", "r5"),
        spec(4), spec(4),
        spec(5, "FINISHED e-5 A", "r6"), spec(5)])
    ran, lines = decide(workloads, client)
    assert ran == [4, 5]
    assert lines == [
        "workload e-1: all 2 rows FINISHED, skipped",
        "workload e-2: FAILED before, skipped (use --rerun to run it again)",
        "workload e-3: KILLED before, skipped (use --rerun to run it again)",
        "workload e-4: 2 of 2 rows not finished, running it",
        "workload e-5: 1 of 2 rows not finished, running it"]
    ran, lines = decide(workloads, client, rerun=True)
    assert ran == [2, 3, 4, 5]
    assert lines[1] == "workload e-2: FAILED before, running it again (--rerun)"


def test_runs_left_running_by_a_crash_are_killed_and_the_workload_reruns(client):
    parent, (a, b) = make_runs(client, 2)
    workloads = group_workloads([spec(1, "RUNNING e-1 A", a), spec(1, "RUNNING e-1 B", b)])
    ran, lines = decide(workloads, client)
    assert ran == [1]
    # the parent is closed once none of its rows runs any more
    assert lines == [f"workload e-1: runs {a}, {b}, {parent} were still RUNNING in MLflow (the "
                     "launcher stopped without closing them); marked KILLED, running it again"]
    for run_id in (parent, a, b):
        assert client.get_run(run_id).info.status == "KILLED"


def test_finished_run_in_mlflow_is_not_touched(client):
    parent, (a, b) = make_runs(client, 2)
    client.set_terminated(a, "FINISHED")
    workloads = group_workloads([spec(1, "FINISHED e-1 A", a), spec(1, "RUNNING e-1 B", b)])
    ran, _ = decide(workloads, client)
    assert ran == [1]
    assert client.get_run(a).info.status == "FINISHED"
    assert client.get_run(b).info.status == "KILLED"
    assert client.get_run(parent).info.status == "KILLED"


def test_running_in_sheet_but_closed_or_unknown_in_mlflow_reruns(client):
    parent, (a,) = make_runs(client, 1)
    client.set_terminated(a, "FAILED")
    workloads = group_workloads([spec(1, "RUNNING e-1 A", a), spec(2, "RUNNING e-2 A", "0" * 32)])
    ran, lines = decide(workloads, client)
    assert ran == [1, 2]
    assert lines[0] == (f"workload e-1: workload run {parent} was still RUNNING in MLflow (its "
                        "launcher died); marked KILLED")
    assert all("not running in MLflow (interrupted)" in line for line in lines[1:])
    assert client.get_run(a).info.status == "FAILED"
    assert client.get_run(parent).info.status == "KILLED"


def test_parent_left_running_after_sync_closed_its_rows_is_closed(client):
    parent, (a, b) = make_runs(client, 2)
    for run_id in (a, b):  # what 'radtrack sync' did before it closed parents too
        client.set_terminated(run_id, "KILLED")
    workloads = group_workloads([spec(1, "KILLED e-1 A", a), spec(1, "KILLED e-1 B", b)])
    ran, lines = decide(workloads, client)
    assert ran == []  # KILLED rows rerun only with --rerun
    assert lines == [f"workload e-1: workload run {parent} was still RUNNING in MLflow (its "
                     "launcher died); marked KILLED",
                     "workload e-1: KILLED before, skipped (use --rerun to run it again)"]
    assert client.get_run(parent).info.status == "KILLED"
