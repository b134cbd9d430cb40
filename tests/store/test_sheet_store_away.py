"""A sheet with earlier rows, launched while its store is away (issue 26): PostgreSQL down,
a tracking server down, a SQLite file locked by another writer.

Its Status cells name earlier runs, so the launcher would look them up (a run a crashed
launcher left RUNNING is marked KILLED) before launching: with the store away it asks first,
without MLflow's retries, and goes on: the Status cells decide as usual (the RUNNING row runs
again, the FINISHED one is skipped), the script runs and spools, one line says the earlier
runs could not be looked up and what `radtrack sync` does with them. Then `radtrack sync`
against the store, back, stores the new run and marks the crashed launcher's run KILLED.

Through the real CLI, with the real PostgreSQL of tests/servers.py, a port nothing listens
on, and a SQLite file held locked.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from servers import free_port
from support import radtrack_cli, run_cli, sqlite_locked

from radtrack.store import newstore

SCRIPTS = Path(__file__).parents[1] / "scripts"
MLFLOW_RETRY = "SQLAlchemy engine could not be created"  # MLflow's warning while it retries
LOOKUP = "could not be looked up"


def _crashed_launch(uri: str, experiment: str, workload: int) -> tuple[str, str]:
    """What a launcher killed mid-run leaves in the store: its workload run and row run
    RUNNING. Returns (parent id, row id)."""
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else c.create_experiment(experiment)
    tags = {"radtrack.experiment": experiment, "radtrack.workload": str(workload)}
    parent = c.create_run(exp_id, run_name=f"{experiment}-{workload}",
                          tags={**tags, "radtrack.role": "workload"}).info.run_id
    row = c.create_run(exp_id, run_name=f"{experiment}-{workload} A",
                       tags={**tags, "radtrack.role": "row", "radtrack.letter": "A",
                             "mlflow.parentRunId": parent}).info.run_id
    return parent, row


def _sheet(path: Path, experiment: str, crashed: str, finished: str) -> Path:
    path.write_text(
        "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
        f"{experiment},1,RUNNING {experiment}-1 A,{crashed},,-,{SCRIPTS / 'store_fault.py'},top,0\n"
        f"{experiment},2,FINISHED {experiment}-2 A,{finished},,-,{SCRIPTS / 'store_fault.py'},top,0\n")
    return path


def _on_port(uri: str, port: int) -> str:
    head, tail = uri.rsplit("@", 1)
    host, rest = tail.split("/", 1)
    return f"{head}@{host.rsplit(':', 1)[0]}:{port}/{rest}"


@pytest.mark.parametrize("away", ["postgresql", "http", "sqlite-locked"])
def test_sheet_with_earlier_rows_launches_while_its_store_is_away(
        away: str, request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".radtrack"
    monkeypatch.setenv("RADTRACK_HOME", str(home))
    if away == "postgresql":
        server = request.getfixturevalue("postgres_server")
        real = server.new_database(f"sheet_away_{int(time.time() * 1000) % 10**9}", mlflow_tables=True)
        MlflowClient(real).create_experiment("away", artifact_location=(tmp_path / "arts").as_uri())
        down = _on_port(real, free_port())  # nothing listens there
    else:
        real = f"sqlite:///{tmp_path / 'mlflow.db'}"
        newstore.prepare(real)  # radtrack's template: no MLflow migrations in this process
        down = f"http://127.0.0.1:{free_port()}" if away == "http" else real
    parent, crashed = _crashed_launch(real, "away", 1)
    _, finished = _crashed_launch(real, "away", 2)
    MlflowClient(real).set_terminated(finished, "FINISHED")
    sheet = _sheet(tmp_path / "sheet.csv", "away", crashed, finished)
    locked = (sqlite_locked(tmp_path / "mlflow.db") if away == "sqlite-locked"
              else contextlib.nullcontext())
    with locked:
        t0 = time.monotonic()
        p = radtrack_cli("--tracking-uri", down, "-l", "top", "--interval", "0.2", str(sheet),
                         env={"RADTRACK_STORE_WAIT_S": "1"})
        took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr and MLFLOW_RETRY not in p.stderr, p.stderr[-3000:]
    assert took < 45, (took, p.stderr[-3000:])  # MLflow's own retries alone take about 100 s
    assert p.stdout.count("script done") == 1, p.stdout  # workload 1 ran, workload 2 skipped
    assert "workload away-2: all 1 rows FINISHED, skipped" in p.stderr
    assert "workload away-1: marked RUNNING in the sheet (not looked up" in p.stderr
    lookups = [ln for ln in p.stderr.splitlines() if LOOKUP in ln]
    assert len(lookups) == 1 and crashed in lookups[0] and "radtrack sync" in lookups[0], p.stderr
    assert len([ln for ln in p.stderr.splitlines() if "run `radtrack sync`" in ln]) == 1, p.stderr
    assert (home / "spool" / "unchecked.json").is_file()

    # sync in-process: the store is the real one, never away (no connection to outlive)
    s = run_cli("sync", "--tracking-uri", real)
    assert s.returncode == 0, s.stdout + s.stderr
    assert f"{crashed}: an earlier run of the sheet, still RUNNING" in s.stdout, s.stdout
    c = MlflowClient(real)
    old = c.get_run(crashed)
    assert old.info.status == "KILLED" and old.data.tags["radtrack.stopped_by"] == "launcher_lost"
    assert c.get_run(parent).info.status == "KILLED"
    assert c.get_run(finished).info.status == "FINISHED"
    exp_id = c.get_experiment_by_name("away").experiment_id
    new = [r for r in c.search_runs([exp_id], "tags.`radtrack.role` = 'row'")
           if r.info.run_id not in (crashed, finished)]
    assert len(new) == 1 and new[0].info.status == "FINISHED", new
    assert new[0].info.run_id in sheet.read_text()
    assert not any((home / "spool").iterdir())
    again = run_cli("sync", "--tracking-uri", real)  # nothing left: said, not redone
    assert again.returncode == 0 and "earlier run" not in again.stdout, again.stdout
