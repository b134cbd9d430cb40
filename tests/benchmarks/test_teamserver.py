"""Team deployment end to end (docs/deployment.md): the real `radtrack` CLI tracking into an
`mlflow server` over PostgreSQL (artifacts proxied by the server), the same server behind
MLflow's basic-auth app, `radtrack ui` against it with a read-only account, and a launcher
killed while several log_batch calls are in flight, then `radtrack sync`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from servers import free_port
from support import radtrack_cli, run_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"


def _client(uri: str, creds: tuple[str, str] | None = None, monkeypatch=None):
    from mlflow import MlflowClient

    if creds is not None:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", creds[0])
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", creds[1])
    return MlflowClient(uri)


def _history(c, rid: str, key: str) -> list:
    """A listener key's stored history, bare or under MLflow's ``system/`` prefix (both are
    read by radtrack; the prefix arrives with issue 16)."""
    return c.get_metric_history(rid, key) or c.get_metric_history(rid, "system/" + key)


def _rows(c, experiment: str) -> dict:
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment}"
    return {r.info.run_name: r for r in c.search_runs([exp.experiment_id])
            if r.data.tags.get("radtrack.role") == "row"}


def _check_row_landed(c, run, tmp: Path) -> None:
    """FINISHED, hardware metrics with every sample once, the Parquet trace and the log."""
    assert run.info.status == "FINISHED"
    rid = run.info.run_id
    frame = pd.read_parquet(c.download_artifacts(rid, "telemetry/top.parquet", str(tmp)))
    assert len(frame) >= 5 and "top/mem_used_mib" in frame.columns
    steps = sorted(h.step for h in _history(c, rid, "top/mem_used_mib"))
    assert steps == frame.loc[frame["top/mem_used_mib"].notna(), "step"].tolist()
    assert any(k.endswith("top/mem_used_mib/mean") for k in run.data.metrics)
    log = Path(c.download_artifacts(rid, "logs/output.log", str(tmp))).read_text()
    assert "busy done True" in log


def test_cli_and_sheet_track_into_mlflow_server_over_postgres(mlflow_server_uri: str,
                                                              tmp_path: Path) -> None:
    env = {"RADTRACK_HOME": str(tmp_path / ".radtrack"), "MLFLOW_TRACKING_URI": ""}
    p = radtrack_cli("--tracking-uri", mlflow_server_uri, "-e", "team-cli", "-l", "top",
                     "--interval", "0.1", str(SCRIPTS / "busy.py"), "1.5", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    c = _client(mlflow_server_uri)
    (run,) = _rows(c, "team-cli").values()
    _check_row_landed(c, run, tmp_path / "cli")
    assert c.get_run(run.info.run_id).info.artifact_uri.startswith("mlflow-artifacts:")

    # a sheet with a co-located pair, the URI from the environment as a team would set it
    shutil.copy(SCRIPTS / "busy.py", tmp_path / "busy.py")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
                     "team-sheet,1,,,,-,busy.py,top,1.5,0.1\n"
                     "team-sheet,1,,,,-,busy.py,top,1.5,0.1\n")
    p = radtrack_cli(str(sheet), cwd=tmp_path, env={**env, "MLFLOW_TRACKING_URI": mlflow_server_uri})
    assert p.returncode == 0, p.stdout + p.stderr
    rows = _rows(c, "team-sheet")
    assert set(rows) == {"team-sheet-1 A", "team-sheet-1 B"}
    for name, run in rows.items():
        _check_row_landed(c, run, tmp_path / name.replace(" ", "_"))
    text = sheet.read_text()
    assert "FINISHED team-sheet-1 A" in text and "FINISHED team-sheet-1 B" in text
    assert not any((tmp_path / ".radtrack" / "spool").glob("*/meta.json"))  # nothing left behind


def test_basic_auth_server_and_read_only_ui(mlflow_auth_server, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    srv = mlflow_auth_server
    base = {"RADTRACK_HOME": str(tmp_path / ".radtrack"), "MLFLOW_TRACKING_URI": srv.uri}
    for var in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    # without credentials: one clear message, nothing started
    p = radtrack_cli("-e", "team-auth", "-l", "top", str(SCRIPTS / "busy.py"), "1", cwd=tmp_path, env=base)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "MLFLOW_TRACKING_USERNAME" in p.stderr and "busy done" not in p.stdout
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr  # no traceback
    # with the admin's credentials the run lands, metrics, trace and all
    admin = {**base, "MLFLOW_TRACKING_USERNAME": srv.admin[0], "MLFLOW_TRACKING_PASSWORD": srv.admin[1]}
    p = radtrack_cli("-e", "team-auth", "-l", "top", "--interval", "0.1", str(SCRIPTS / "busy.py"),
                     "1.5", cwd=tmp_path, env=admin)
    assert p.returncode == 0, p.stdout + p.stderr
    c = _client(srv.uri, srv.admin, monkeypatch)
    (run,) = _rows(c, "team-auth").values()
    _check_row_landed(c, run, tmp_path / "auth")

    # the viewer account (permission READ) cannot write...
    from mlflow.exceptions import MlflowException

    viewer = _client(srv.uri, srv.viewer, monkeypatch)
    exp_id = viewer.get_experiment_by_name("team-auth").experiment_id
    with pytest.raises(MlflowException, match="PERMISSION_DENIED|403|[Pp]ermission"):
        viewer.create_run(exp_id)
    # ...but reads what the page plots: metric histories and the Parquet trace via the proxy
    assert _history(viewer, run.info.run_id, "top/mem_used_mib")
    assert Path(viewer.download_artifacts(run.info.run_id, "telemetry/top.parquet",
                                          str(tmp_path / "viewer"))).stat().st_size > 0
    # so it is all `radtrack ui` needs: the page lists the team's experiment
    port = free_port()
    ui = subprocess.Popen([sys.executable, "-m", "radtrack", "ui", "--port", str(port),
                           "--views-dir", str(tmp_path / "views")],
                          env={**os.environ, **base, "MLFLOW_TRACKING_USERNAME": srv.viewer[0],
                               "MLFLOW_TRACKING_PASSWORD": srv.viewer[1]},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                layout = urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=10).read()
                break
            except OSError:
                assert ui.poll() is None, ui.stderr.read()
                assert time.monotonic() < deadline, "radtrack ui did not answer"
                time.sleep(0.5)
        assert '"team-auth"' in json.dumps(json.loads(layout))
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(30)


SHIPPER = """
import json, os, sys, threading, time
from pathlib import Path
from radtrack.store import restwriter
from radtrack.store.sink import Sink
from radtrack.store.mlflow_client import mlflow_client as client
uri, run_id, root, n, k = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
# the server stores the first 8 calls, then stops answering: the calls after them stay in
# flight, stored calls' .shipped counts are not written yet (a round is marked as a whole)
store = restwriter.RestMetricWriter.log_metrics
lock, stored, never, told = threading.Lock(), [0], threading.Event(), [False]
def stalling(self, run_id, points):
    with lock:
        stall = stored[0] >= 8
        first, told[0] = stall and not told[0], told[0] or stall
    if first:  # once: the stalled calls run in several threads, their prints would mix
        print("stalled", flush=True)
    if stall:
        never.wait()
    store(self, run_id, points)
    with lock:
        stored[0] += 1
restwriter.RestMetricWriter.log_metrics = stalling
sink = Sink(client(uri), run_id, root, uri)
for i in range(n):
    for name in ("smi", "dcgm", "top"):
        sink.feed(name, json.dumps({"type": "sample", "t": 1.7e9 + i * 0.1,
                                    "v": {f"{name}/k{j}_pct": float(i + j) for j in range(k)}}))
print("spooled", flush=True)
while True:
    sink.ship()
    time.sleep(0.05)
"""


@pytest.mark.slow
def test_launcher_killed_with_calls_in_flight_then_sync_stores_each_sample_once(
        mlflow_server_uri: str, tmp_path: Path) -> None:
    """SIGKILL while several log_batch calls are in flight (some stored, some not, their
    .shipped counts behind): `radtrack sync` then stores the rest, every sample once."""
    c = _client(mlflow_server_uri)
    rid = c.create_run(c.create_experiment("team-crash")).info.run_id
    root = tmp_path / "spool"
    n, k = 150, 40  # 3 streams x 6000 points: 18 calls, 4 in flight
    env = {**os.environ, "RADTRACK_SHIP_CONCURRENCY": "4", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", SHIPPER, mlflow_server_uri, rid, str(root),
                             str(n), str(k)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "spooled"
    line = proc.stdout.readline().strip()  # some calls stored, the others in flight...
    assert line == "stalled", line
    proc.kill()  # ...when the launcher dies
    proc.wait()
    shipped = {p.stem: int(p.read_text()) for p in root.glob(f"{rid}/*.shipped")}
    assert sum(shipped.values()) < 3 * n, shipped
    stored = sum(len(_history(c, rid, f"{name}/k{j}_pct")) for name in ("smi", "dcgm", "top")
                 for j in range(k))
    assert 0 < stored < 3 * n * k, stored  # partly stored before the kill
    # in-process (support.run_cli): the server never went away; only the launcher died
    p = run_cli("sync", "--spool", str(root), cwd=tmp_path,
                env={"RADTRACK_SHIP_CONCURRENCY": env["RADTRACK_SHIP_CONCURRENCY"]})
    assert p.returncode == 0 and "1 run(s) stored" in p.stdout, p.stdout + p.stderr
    for name in ("smi", "dcgm", "top"):
        for j in (0, k - 1):
            hist = sorted((h.step, h.value) for h in _history(c, rid, f"{name}/k{j}_pct"))
            assert hist == [(i, float(i + j)) for i in range(n)], (name, j)
    assert not (root / rid).exists()


def test_nodes_writing_postgresql_directly_need_a_shared_artifact_path(postgres_uri: str,
                                                                       tmp_path: Path) -> None:
    """The second recipe: a postgresql+psycopg:// tracking URI (the sink's SQL path), the
    experiment's artifacts on a shared path. An experiment radtrack would have to create
    (artifacts in ./mlruns on the node) is refused up front, the password not echoed."""
    env = {"RADTRACK_HOME": str(tmp_path / ".radtrack"), "MLFLOW_TRACKING_URI": postgres_uri}
    args = ["-e", "team-direct", "-l", "top", "--interval", "0.1", str(SCRIPTS / "busy.py"), "1.5"]
    p = radtrack_cli(*args, cwd=tmp_path, env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "experiment 'team-direct' does not exist" in p.stderr and "shared path" in p.stderr
    password = postgres_uri.split(":")[2].split("@")[0]
    assert password not in p.stderr and ":***@" in p.stderr and "busy done" not in p.stdout
    c = _client(postgres_uri)
    shared = tmp_path / "shared-artifacts"
    c.create_experiment("team-direct", artifact_location=shared.as_uri())
    p = radtrack_cli(*args, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    (run,) = _rows(c, "team-direct").values()
    _check_row_landed(c, run, tmp_path / "direct")
    assert (shared / run.info.run_id / "artifacts" / "telemetry" / "top.parquet").is_file()
    assert not (tmp_path / "mlruns").exists()


def test_teamserver_benchmark_writes_json_and_keeps_to_its_budget(postgres_server,
                                                                  tmp_path: Path) -> None:
    """benchmarks/teamserver.py as benchmarks/teamserver_gpu_host.sh runs it on a GPU host
    (there with 8 workers, nodes 1,3,6,12, 10 s, 2 repeats): one short REST case stored
    with nothing lost, the JSON names the machine and the PostgreSQL it used, and a case
    that would start past --budget is skipped and listed, not run."""
    from support import REPO

    out = tmp_path / "ts.json"
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "teamserver.py"), "--workers", "1",
                        "--nodes", "1", "--concurrency", "4", "--modes", "rest", "--duration", "2",
                        "--gpus", "1", "--repeat", "2", "--budget", "33", "--json", str(out)],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["workers"] == 1 and data["keys_per_node"] == 60 and "PostgreSQL" in data["postgres"]
    [first] = data["cases"]  # the first case starts at once; it takes more than 1 s
    assert (first["mode"], first["nodes"], first["rep"], first["lost"]) == ("rest", 1, 1, 0)
    assert first["all_closed"] and first["stored_pts_s"] > 0
    # rep 2 would have started past 33 - 2 - 30 s
    assert data["skipped"] == [{"mode": "rest", "nodes": 1, "concurrency": 4, "rep": 2}]
    assert "Skipped for lack of time" in p.stdout
