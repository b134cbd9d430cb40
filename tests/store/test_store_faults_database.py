"""A database store (PostgreSQL) that is down at launch and throughout (issue 26): the same
"store away" path as a tracking server that is down, asked by a quick reachability probe
before MLflow opens the store (radtrack/store/reach.py), never after MLflow's own retries.

Through the real CLI: the launch against a ``postgresql://`` URI on a port nothing listens
on runs the script, spools, prints one line naming ``radtrack sync`` and ends with the
script's exit status; ``radtrack sync`` against the still-down store says so at once; ``radtrack
sync --tracking-uri`` the real PostgreSQL (tests/servers.py) creates the runs and stores
everything with the true status. A reachable server that refuses the login, or has no such
database, is refused up front in one line.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from servers import free_port
from support import radtrack_cli, run_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
FAULT = SCRIPTS / "store_fault.py"
MLFLOW_RETRY = "SQLAlchemy engine could not be created"  # MLflow's warning while it retries


def _on_port(uri: str, port: int) -> str:
    head, tail = uri.rsplit("@", 1)
    host, rest = tail.split("/", 1)
    return f"{head}@{host.rsplit(':', 1)[0]}:{port}/{rest}"


@pytest.mark.slow
def test_postgres_down_at_launch_then_sync(postgres_server, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".radtrack"
    monkeypatch.setenv("RADTRACK_HOME", str(home))
    real = postgres_server.new_database("faults_pg_down", mlflow_tables=True)
    MlflowClient(real).create_experiment("pgdown", artifact_location=(tmp_path / "arts").as_uri())
    down = _on_port(real, free_port())  # nothing listens there
    t0 = time.monotonic()
    p = radtrack_cli("--tracking-uri", down, "-e", "pgdown", "-l", "top", "--interval", "0.2",
                     str(FAULT), "3", env={"RADTRACK_STORE_WAIT_S": "2"})
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stderr[-3000:]  # the script's exit 3: FAILED
    assert "script done" in p.stdout
    assert "Traceback" not in p.stderr and MLFLOW_RETRY not in p.stderr, p.stderr[-3000:]
    assert "does not answer" in p.stderr and "Connection refused" in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "radtrack sync" in ln]
    assert len(lines) == 1 and "spooled in" in lines[0], p.stderr
    assert "pgdown A: FAILED (exit 3, its run not created yet)" in p.stderr
    assert postgres_server.password not in p.stdout + p.stderr
    assert took < 60, took  # MLflow's own retries alone take about 100 s
    assert len(list(home.glob("spool/*/create.json"))) == 1

    t0 = time.monotonic()
    # sync in-process (the real database never went away: no connection outlives an outage)
    still = run_cli("sync", env={"MLFLOW_TRACKING_URI": down})  # still down: kept, at once
    assert still.returncode == 1 and "could not create the run(s)" in still.stdout, still.stdout
    assert "Connection refused" in still.stdout and MLFLOW_RETRY not in still.stderr
    assert time.monotonic() - t0 < 30

    s = run_cli("sync", "--tracking-uri", real)
    assert s.returncode == 0, s.stdout + s.stderr
    assert "ended FAILED (exit 3)" in s.stdout and postgres_server.password not in s.stdout
    c = MlflowClient(real)
    runs = c.search_runs([c.get_experiment_by_name("pgdown").experiment_id])
    parent = next(r for r in runs if r.data.tags.get("radtrack.role") == "workload")
    row = next(r for r in runs if r.data.tags.get("radtrack.role") == "row")
    assert parent.info.status == "FAILED" and row.info.status == "FAILED"
    assert row.data.tags["radtrack.exit_code"] == "3" and row.data.tags["fault_tag"] == "yes"
    assert row.data.tags["mlflow.parentRunId"] == parent.info.run_id
    rid = row.info.run_id
    assert [m.value for m in c.get_metric_history(rid, "loss")] == [1.0, 0.5, pytest.approx(1 / 3)]
    # the launcher's end step, run by sync (radtrack/postrun/synced.py): the code windows
    assert any(k.startswith("window/epoch/") for k in row.data.metrics), sorted(row.data.metrics)
    assert "radtrack.synced_end" in parent.data.tags
    assert {"logs", "environment", "telemetry", "windows"} <= {a.path for a in c.list_artifacts(rid)}
    frame = pd.read_parquet(c.download_artifacts(rid, "telemetry/top.parquet", str(tmp_path)))
    steps = sorted(m.step for m in c.get_metric_history(rid, "system/top/mem_used_mib"))
    assert len(frame) >= 5 and steps == frame["step"].tolist()  # every sample, once
    assert not any((home / "spool").iterdir())


@pytest.mark.parametrize("what", ["password", "database"])
def test_postgres_that_refuses_the_login_is_refused_in_one_line(postgres_server, what: str,
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RADTRACK_HOME", str(tmp_path / ".radtrack"))
    good = postgres_server.uri("postgres")
    uri = (good.replace(f":{postgres_server.password}@", ":wrong@") if what == "password"
           else good.rsplit("/", 1)[0] + "/no_such_db")
    t0 = time.monotonic()
    p = radtrack_cli("--tracking-uri", uri, "-e", "refused", "-l", "top", str(FAULT), "0")
    assert p.returncode == 2, p.stderr[-3000:]
    assert time.monotonic() - t0 < 60
    errors = [ln for ln in p.stderr.splitlines() if "refused the connection" in ln]
    assert len(errors) == 1, p.stderr[-3000:]
    assert ("password authentication failed" if what == "password" else "does not exist") in errors[0]
    assert "script done" not in p.stdout and "Traceback" not in p.stderr and MLFLOW_RETRY not in p.stderr
    assert postgres_server.password not in p.stdout + p.stderr
    assert not (tmp_path / ".radtrack" / "spool").exists() or not any((tmp_path / ".radtrack" / "spool").iterdir())
