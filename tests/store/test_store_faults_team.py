"""The team store (issue 28): no password in any file radtrack writes with a ``postgresql://``
URI, and MLflow's "View run" line printed at most once per run of a launch on a server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import launch_importing, radtrack_cli, run_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"


def _files_holding(secret: str, *folders: Path) -> list[str]:
    return [str(f) for folder in folders for f in folder.rglob("*")
            if f.is_file() and secret.encode() in f.read_bytes()]


@pytest.mark.slow
def test_no_database_password_in_the_spool_sync_or_the_sheet_folder(postgres_server, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher killed mid-run leaves its spool (meta.json, create.json, samples); neither it,
    the run folders, the sheet's folder nor sync's output holds the database password, and
    sync, given the URI in MLFLOW_TRACKING_URI, stores the run."""
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".radtrack"
    monkeypatch.setenv("RADTRACK_HOME", str(home))
    uri = postgres_server.new_database("faults_secret", mlflow_tables=True)
    secret = postgres_server.password
    assert f":{secret}@" in uri
    MlflowClient(uri).create_experiment("secret", artifact_location=(tmp_path / "arts").as_uri())
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    sheet = sheets / "secret.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"secret,1,,,,-,{SCRIPTS / 'busy.py'},top,30\n")
    out = tmp_path / "launcher.out"
    with out.open("wb") as f:
        launcher = subprocess.Popen([sys.executable, "-m", "radtrack", "--tracking-uri", uri,
                                     "--interval", "0.2", str(sheet)], stdout=f, stderr=f,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                    start_new_session=True)
    spool = home / "spool"
    deadline = time.monotonic() + 120
    while not (any(spool.glob("*/meta.json")) and any(spool.glob("*/top.jsonl"))):
        assert launcher.poll() is None and time.monotonic() < deadline, out.read_text()
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(launcher.pid, 9)  # the launcher and its script, as a lost node
    launcher.wait()
    assert any(spool.glob("*/create.json"))
    assert _files_holding(secret, home, sheets, out.parent / "launcher.out") == []
    s = run_cli("sync", env={"MLFLOW_TRACKING_URI": uri})  # in-process: the database never went away
    assert s.returncode == 0 and "1 run(s) stored" in s.stdout, s.stdout + s.stderr
    assert secret not in s.stdout + s.stderr
    assert _files_holding(secret, home, sheets) == []
    c = MlflowClient(uri)
    runs = c.search_runs([c.get_experiment_by_name("secret").experiment_id])
    assert sorted(r.info.status for r in runs) == ["KILLED", "KILLED"]


@pytest.mark.slow
def test_view_run_lines_at_most_once_per_run(mlflow_server_uri: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RADTRACK_HOME", str(tmp_path / ".radtrack"))
    sheet = tmp_path / "views.csv"
    rows = "".join(f"views-{os.getpid()},1,,,,-,{SCRIPTS / name},top,\n"
                   for name in ("train_ok.py", "mlflow_code/trials.py"))
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n" + rows)
    p = radtrack_cli("--tracking-uri", mlflow_server_uri, "--interval", "0.5", str(sheet))
    assert p.returncode == 0, p.stderr[-3000:]
    text = p.stdout + p.stderr
    ids = re.findall(r"View run .*?/runs/([0-9a-f]{32})", text)
    assert ids, text[-3000:]  # MLflow's own lines for the scripts' runs are still there
    repeated = {i: ids.count(i) for i in set(ids) if ids.count(i) > 1}
    assert not repeated, text[-3000:]


def test_a_launch_into_a_server_starts_its_script_before_mlflow_is_imported(
        mlflow_server_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's health and credentials are asked through urllib (radtrack/store/credentials.py),
    so a server with no user to check costs no MLflow import before the script: MLflow's own
    import (-X importtime, in the launcher) finishes after the script's first line."""
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    p, script_first = launch_importing(["--tracking-uri", mlflow_server_uri, "-e", "server-start",
                                        "-l", "none"], tmp_path, {"RADTRACK_HOME": str(tmp_path / ".radtrack")})
    assert p.returncode == 0, p.stderr[-3000:]
    assert script_first, "MLflow was imported before the script started"
    (run,) = [r for r in MlflowClient(mlflow_server_uri).search_runs(
        [MlflowClient(mlflow_server_uri).get_experiment_by_name("server-start").experiment_id])
        if r.data.tags.get("radtrack.role") == "row"]
    assert run.info.status == "FINISHED"
