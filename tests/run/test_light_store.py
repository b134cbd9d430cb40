"""The launcher's light store clients (radtrack/store/handle.py, issue 47): a launch into SQLite
or an ``mlflow server`` never imports MLflow in radtrack's own processes (the launcher, its
listeners), and what it stores reads back through MLflow's own client as MLflow writes it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support import REPO

SCRIPT = "import time\nprint('started', flush=True)\ntime.sleep(0.5)\n"
HEAVY = ("mlflow", "sqlalchemy", "alembic")


def _imported(stderr: str) -> set[str]:
    """Top-level packages a ``-X importtime`` process imported."""
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:")}


def _launch(uri: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "sleeper.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "RADTRACK_HOME": str(tmp_path / ".radtrack"), "PYTHONUNBUFFERED": "1"}
    env.pop("RADTRACK_STORE_CLIENT", None)
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "radtrack", "--tracking-uri", uri,
                           "-e", "light", "-l", "top", "--interval", "0.1", *args, str(script), "--x", "1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def _check_stored(uri: str) -> None:
    """The launch's runs as MLflow's own client reads them: names, user, tags, params, status,
    summaries, the launcher's cost, artifacts."""
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("light")
    runs = c.search_runs([exp.experiment_id])
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    parents = [r for r in runs if r.data.tags.get("radtrack.role") == "workload"]
    assert len(rows) == 1 and len(parents) == 1
    row, parent = rows[0], parents[0]
    assert parent.info.run_name == "light-1" and row.info.run_name == "light-1 A"
    assert row.data.tags["mlflow.runName"] == "light-1 A"
    assert row.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert row.info.user_id == row.data.tags["mlflow.user"]
    assert row.info.status == parent.info.status == "FINISHED"
    assert row.info.end_time >= row.info.start_time
    assert row.data.params["x"] == "1" and row.data.params["listeners"] == "top"
    m = row.data.metrics
    assert m["summary/duration_s"] > 0.4
    assert "summary/top/mem_used_mib/mean" in m
    # without MLflow's import the launcher's own CPU over the 0.5-s run is small (was ~2 CPU-s)
    assert 0 < m["summary/monitoring/launcher_cpu_s"] < 1.5
    paths = {a.path for a in c.list_artifacts(row.info.run_id, "telemetry")}
    assert {"telemetry/top.parquet", "telemetry/top.json"} <= paths
    assert [a.path for a in c.list_artifacts(row.info.run_id, "logs")] == ["logs/output.log"]
    assert c.get_metric_history(row.info.run_id, "system/top/mem_used_mib")


def test_a_launch_into_sqlite_stores_everything_without_importing_mlflow(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    p = _launch(uri, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "started" in p.stdout
    assert not _imported(p.stderr) & set(HEAVY), "the launcher imported MLflow or SQLAlchemy"
    _check_stored(uri)


def test_a_launch_into_a_tracking_server_stores_everything_without_importing_mlflow(
        mlflow_server_uri: str, tmp_path: Path) -> None:
    p = _launch(mlflow_server_uri, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert not _imported(p.stderr) & set(HEAVY), "the launcher imported MLflow or SQLAlchemy"
    _check_stored(mlflow_server_uri)


@pytest.mark.parametrize("kind", ["sqlite", "server"])
def test_a_colocated_workload_s_end_reads_its_baselines_without_mlflow(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sheet's solo row, then two co-located rows of the same script: the second workload's
    end reads its stored runs and solo baseline (STP and ANTT in its closing line) through the
    light client (radtrack/analysis/reader_client.py), and reads exactly what MLflow's
    client reads from the same store."""
    from radtrack.analysis.workload_runs import read_workload_runs
    from radtrack.store.handle import CLIENT_ENV

    uri = (f"sqlite:///{tmp_path / 'mlflow.db'}" if kind == "sqlite"
           else request.getfixturevalue("mlflow_server_uri"))
    experiment = f"co{kind}{os.getpid()}{tmp_path.name[-6:]}".replace("_", "")  # the server is the session's
    (tmp_path / "sleeper.py").write_text(SCRIPT)
    sheet = tmp_path / "co.csv"
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,RunName\n"
                     + "".join(f"{experiment},{w},-,-,sleeper.py,,--x 1,0.1,{n}\n"
                               for w, n in ((1, "solo"), (2, "a"), (2, "b"))))
    env = {**os.environ, "RADTRACK_HOME": str(tmp_path / ".radtrack"), "PYTHONUNBUFFERED": "1"}
    env.pop(CLIENT_ENV, None)
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "radtrack", "--tracking-uri", uri,
                        "-l", "top", str(sheet)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"{experiment}-2: stp " in p.stderr + p.stdout, (p.stdout + p.stderr)[-3000:]
    assert not _imported(p.stderr) & set(HEAVY), "the workload's end imported MLflow or SQLAlchemy"
    monkeypatch.delenv(CLIENT_ENV, raising=False)
    light = read_workload_runs(experiment, 2, uri)
    monkeypatch.setenv(CLIENT_ENV, "mlflow")
    theirs = read_workload_runs(experiment, 2, uri)
    assert light is not None and theirs is not None
    assert len(light.runs) == 5  # both parents, the solo row, the two co-located rows
    pd.testing.assert_frame_equal(light.runs.reset_index(drop=True), theirs.runs.reset_index(drop=True))
    pd.testing.assert_frame_equal(light.summaries.reset_index(drop=True),
                                  theirs.summaries.reset_index(drop=True))


def test_a_listener_process_imports_no_mlflow() -> None:
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "radtrack.listeners", "top", "--interval", "0.05",
                        "--devices", "", "--count", "2"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert '"type": "sample"' in p.stdout
    assert not _imported(p.stderr) & {"mlflow", "sqlalchemy", "pandas"}


@pytest.mark.parametrize("kind", ["sqlite", "server"])
def test_the_light_clients_write_what_mlflow_reads(kind: str, tmp_path: Path,
                                                  request: pytest.FixtureRequest) -> None:
    import uuid

    from mlflow import MlflowClient

    from radtrack.store.entities import Metric, Param, RunTag, StoreError
    from radtrack.store.handle import StoreHandle
    from radtrack.store.uris import default_artifact_location

    uri = (f"sqlite:///{tmp_path / 'mlflow.db'}" if kind == "sqlite"
           else request.getfixturevalue("mlflow_server_uri"))
    handle = StoreHandle(uri)
    c = handle.client
    assert handle.light
    name = f"e-{uuid.uuid4().hex[:8]}"  # the session's server holds other tests' experiments
    exp_id = c.create_experiment(name, artifact_location=default_artifact_location(uri))
    assert c.get_experiment_by_name(name).experiment_id == exp_id
    assert c.get_experiment_by_name("nope") is None
    run = c.create_run(exp_id, run_name="r1", tags={"mlflow.user": "ann", "k": "v"}, start_time=1000)
    rid = run.info.run_id
    c.log_batch(rid, metrics=[Metric("m", 1.0, 5, 0), Metric("m", 3.0, 4, 1), Metric("m", 2.0, 9, 0),
                              Metric("n", math.nan, 5, 0), Metric("inf", math.inf, 5, 0)],
                params=[Param("p", "1")], tags=[RunTag("t", "x")])
    c.log_batch(rid, metrics=[Metric("m", 1.0, 5, 0)])  # a resend: stored once
    c.log_batch(rid, params=[Param("p", "1")])  # the same value again: accepted, as MLflow does
    with pytest.raises(StoreError, match="INVALID_PARAMETER_VALUE|Changing param values is not allowed"):
        c.log_batch(rid, params=[Param("p", "2")])
    c.set_tag(rid, "mlflow.runName", "renamed")
    c.log_artifact(rid, str(Path(__file__)), "code")
    c.set_terminated(rid, "KILLED", end_time=2000)

    m = MlflowClient(uri)
    got = m.get_run(rid)
    assert got.info.run_name == "renamed" and got.data.tags["mlflow.runName"] == "renamed"
    assert got.info.user_id == "ann" and got.info.status == "KILLED"
    assert (got.info.start_time, got.info.end_time) == (1000, 2000)
    assert got.data.params == {"p": "1"} and got.data.tags["t"] == "x"
    assert got.data.metrics["m"] == 3.0  # the greatest (step, timestamp, value)
    assert math.isnan(got.data.metrics["n"]) and got.data.metrics["inf"] > 1e308
    assert len(m.get_metric_history(rid, "m")) == 3
    assert [a.path for a in m.list_artifacts(rid, "code")] == [f"code/{Path(__file__).name}"]
    # what the light client reads back is what MLflow reads
    mine = c.get_run(rid)
    assert (mine.data.params, mine.data.tags) == (got.data.params, got.data.tags)
    assert mine.info.artifact_uri == got.info.artifact_uri
    found = c.search_runs([exp_id], filter_string="tags.`t` = 'x' and attributes.start_time >= 1000")
    assert [r.info.run_id for r in found] == [rid]
    assert c.search_runs([exp_id], filter_string="tags.`t` = 'y'") == []
    # a filter the light client does not read goes to MLflow's own client
    assert [r.info.run_id for r in c.search_runs([exp_id], filter_string="metrics.m > 1")] == [rid]
    _reads_as_mlflow(c, m, exp_id, rid, tmp_path)


def _reads_as_mlflow(c: Any, m: Any, exp_id: str, rid: str, tmp_path: Path) -> None:
    """The calls radtrack's readers make (radtrack/analysis/reader_client.py) answer as MLflow's
    client does: searches by page, oldest first, by status and param; metric histories
    (NaN and infinity as stored); artifacts listed and downloaded."""
    from radtrack.store.entities import Param

    later = c.create_run(exp_id, run_name="r2", tags={"mlflow.user": "ann"}, start_time=1500)
    c.log_batch(later.info.run_id, params=[Param("p", "2")])
    c.set_terminated(later.info.run_id, "FINISHED", end_time=2500)
    for query in ("", "attributes.status = 'FINISHED' and params.p = '2'", "params.p = '1'"):
        for order in (None, ["attributes.start_time ASC"]):
            mine = c.search_runs([exp_id], filter_string=query, order_by=order, max_results=1)
            theirs = m.search_runs([exp_id], filter_string=query, order_by=order, max_results=1)
            assert [r.info.run_id for r in mine] == [r.info.run_id for r in theirs], (query, order)
            assert bool(mine.token) == bool(theirs.token), (query, order)
            if mine.token:
                rest = c.search_runs([exp_id], filter_string=query, order_by=order, page_token=mine.token)
                more = m.search_runs([exp_id], filter_string=query, order_by=order, page_token=theirs.token)
                assert [r.info.run_id for r in rest] == [r.info.run_id for r in more]
    for key in ("m", "n", "inf", "absent"):
        mine_h = [(p.key, p.timestamp, p.step, repr(p.value)) for p in c.get_metric_history(rid, key)]
        theirs_h = [(p.key, p.timestamp, p.step, repr(p.value)) for p in m.get_metric_history(rid, key)]
        assert mine_h == theirs_h, key
    assert ([(a.path, a.is_dir) for a in c.list_artifacts(rid, "code")]
            == [(a.path, a.is_dir) for a in m.list_artifacts(rid, "code")])
    assert [(a.path, a.is_dir) for a in c.list_artifacts(rid)] == [("code", True)]
    name = f"code/{Path(__file__).name}"
    got = Path(c.download_artifacts(rid, name, str(tmp_path / "dl")))
    assert got == tmp_path / "dl" / name and got.read_bytes() == Path(__file__).read_bytes()
    folder = Path(c.download_artifacts(rid, "code", str(tmp_path / "dl2")))
    assert (folder / Path(__file__).name).read_bytes() == Path(__file__).read_bytes()


def test_the_store_client_can_be_mlflow_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from radtrack.store.handle import CLIENT_ENV, StoreHandle

    monkeypatch.setenv(CLIENT_ENV, "mlflow")
    assert not StoreHandle(f"sqlite:///{tmp_path / 'x.db'}").light


def test_search_filters_the_light_clients_read() -> None:
    from radtrack.store.search_filter import Clause, Unsupported, parse

    assert parse("tags.`radtrack.role` = 'workload' and tags.`radtrack.workload` = '3'") == [
        Clause("tag", "radtrack.role", "=", "workload"), Clause("tag", "radtrack.workload", "=", "3")]
    assert parse("attributes.start_time >= 5 AND attributes.start_time <= 9") == [
        Clause("attribute", "start_time", ">=", 5), Clause("attribute", "start_time", "<=", 9)]
    assert parse("") == []
    assert parse("attributes.status = 'FINISHED' and params.script = '/a b/t.py'") == [
        Clause("attribute", "status", "=", "FINISHED"), Clause("param", "script", "=", "/a b/t.py")]
    with pytest.raises(Unsupported):
        parse("params.lr > '0.1'")
    with pytest.raises(Unsupported):
        parse("metrics.loss < 1")


def test_the_command_leaves_with_its_code_after_every_exit_handler() -> None:
    """radtrack/run/quick_exit.py: os._exit after threads, atexit handlers and a flush."""
    from radtrack.run.quick_exit import is_command

    assert not is_command()  # main called inside pytest keeps Python's usual exit
    code = ("import atexit, sys, threading, time\n"
            "from radtrack.run.quick_exit import leave\n"
            "atexit.register(lambda: print('handler ran', flush=False))\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
            "print('unflushed', end='')\n"
            "leave(7)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 7
    assert p.stdout == "unflushedthread done\nhandler ran\n"
