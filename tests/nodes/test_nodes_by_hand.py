"""Multi-node rows by hand (no SLURM): two node agents on loopback, each `radtrack --nodes 2
--node-rank K --master 127.0.0.1:PORT` with its own RADTRACK_HOME (its "node's disk"), one
SQLite store both reach, running a 2-process gloo DDP script (tests/scripts/ddp_gloo.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers import free_port as _port  # outside the ephemeral ports
from support import run_cli

from radtrack.vocab import schema

REPO = Path(__file__).resolve().parents[2]
DDP = REPO / "tests" / "scripts" / "ddp_gloo.py"

pytestmark = pytest.mark.slow


def _env(tmp: Path, node: int) -> dict[str, str]:
    home = tmp / f"node{node}"
    home.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONUNBUFFERED": "1", "RADTRACK_HOME": str(home),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}", "OMP_NUM_THREADS": "1",
            "GLOO_SOCKET_IFNAME": "lo", "RADTRACK_STORE_WAIT_S": "30"}


def _reader_env(tmp: Path, node: int) -> dict[str, str]:
    """What :func:`_env` sets beyond this process's environment: for an in-process reader."""
    return {k: v for k, v in _env(tmp, node).items() if os.environ.get(k) != v}


def start_node(tmp: Path, node: int, port: int, *script_args: str) -> subprocess.Popen[str]:
    """One node agent, as a user starts it on node ``node`` (its own process group)."""
    argv = [sys.executable, "-m", "radtrack", "--wait-end", "-e", "multi", "-l", "top",
            "--interval", "0.1", "--nodes", "2", "--node-rank", str(node),
            "--master", f"127.0.0.1:{port}", str(DDP), *script_args]
    log = (tmp / f"node{node}.log").open("w")  # not a pipe: nobody reads it while they run
    return subprocess.Popen(argv, cwd=tmp / f"node{node}", env=_env(tmp, node), text=True,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def finish(tmp: Path, node: int, proc: subprocess.Popen[str], timeout: float = 240) -> str:
    """Wait for a node agent (killed, with its tree, past ``timeout``); its output."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        for pid in _tree(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    return (tmp / f"node{node}.log").read_text()


def the_run(tmp: Path, experiment: str = "multi"):
    """The one row run of ``experiment`` (and the client)."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    rows = client.search_runs([exp.experiment_id], f"tags.`{schema.ROLE}` = '{schema.ROLE_ROW}'")
    assert len(rows) == 1, [r.info.run_name for r in rows]
    return client, rows[0]


def test_two_node_agents_are_one_run_with_every_nodes_series(tmp_path: Path) -> None:
    port = _port()
    nodes = [start_node(tmp_path, k, port, "--steps", "5") for k in (0, 1)]
    out = [finish(tmp_path, k, p) for k, p in enumerate(nodes)]
    assert [p.returncode for p in nodes] == [0, 0], "\n----\n".join(out)
    # the DDP ranks really trained together: all-reduced gradients, identical weights
    sums = [line.rsplit(" ", 1)[1] for o in out for line in o.splitlines() if "weight sum" in line]
    assert len(sums) == 2 and sums[0] == sums[1], out
    assert "'RANK': '1'" in out[1] and "'WORLD_SIZE': '2'" in out[1] and "'NODE_RANK': '1'" in out[1]

    client, run = the_run(tmp_path)
    assert run.info.status == "FINISHED"
    tags, metrics = run.data.tags, run.data.metrics
    assert tags[schema.NODES] == "2"
    assert tags[schema.node_tag(0, "status")] == tags[schema.node_tag(1, "status")] == "FINISHED"
    assert schema.NODES_FAILED not in tags
    # one host, one clock: the true offset is 0, so the measured one is within its error
    error_ms = float(tags[schema.node_tag(1, "clock_error_ms")])
    assert error_ms >= 0
    assert abs(float(tags[schema.node_tag(1, "clock_offset_ms")])) <= error_ms + 0.01
    assert tags[schema.node_tag(1, "listener.top")] == "ok"
    # node 0 keeps the one-node keys, node 1's are node-scoped; both series stored
    mine = client.get_metric_history(run.info.run_id, "system/top/cpu_pct")
    theirs = client.get_metric_history(run.info.run_id, "system/node1/top/cpu_pct")
    assert len(mine) >= 2 and len(theirs) >= 2
    # on node 0's clock: node 1's samples fall within the run's span (its part may start a
    # little before node 0's script on a loaded host)
    assert run.info.start_time - 30_000 <= theirs[0].timestamp <= run.info.end_time + 5_000
    d0, d1 = metrics[schema.node_summary_key(0, "duration_s")], metrics[schema.node_summary_key(1, "duration_s")]
    total = metrics[schema.nodes_total_key("duration_s")]
    assert 0 < d0 <= total and 0 < d1 <= total
    assert "summary/node1/top/cpu_pct/mean" in metrics and "summary/top/cpu_pct/mean" in metrics
    arts = {a.path for a in client.list_artifacts(run.info.run_id, "telemetry")}
    assert {"telemetry/top.parquet", "telemetry/node1.top.parquet"} <= arts
    log = Path(client.download_artifacts(run.info.run_id, "logs/node1/output.log", str(tmp_path)))
    assert "rank 1/2 done" in log.read_text()
    # every node's spool is stored and gone
    assert not any((tmp_path / "node1" / "spool").glob("*/meta.json"))

    # readers: the report's per-node and total figures; export's node-scoped columns, labelled
    # in-process (support.run_cli): a reader's process is not what is tested here
    env = _reader_env(tmp_path, 0)
    report = run_cli("report", "multi", env=env, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    section = report.stdout.split("Multi-node runs", 1)[1]
    rows = [line.split() for line in section.splitlines() if line.startswith(run.info.run_name)]
    assert [r[len(run.info.run_name.split())] for r in rows] == ["0", "1", "all"], section
    out = tmp_path / "wide.csv"
    export = run_cli("export", "multi", "--out", str(out), env=env, cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    import pandas as pd

    wide = pd.read_csv(out)  # a row per node and step, each node's series under the plain key
    assert "node" in wide.columns and not any(c.startswith("node1/") for c in wide.columns)
    for node in (0, 1):
        assert wide.loc[wide["node"] == node, "top/cpu_pct"].notna().sum() >= 2, node
    meanings = pd.read_csv(out.with_name("wide.columns.csv")).set_index("name")
    assert meanings.loc["top/cpu_pct", "unit"] == "%"


def _tree(pid: int) -> list[int]:
    import psutil

    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.NoSuchProcess:
        return [pid]


def spooled_lines(spool: Path, stream: str) -> int:
    """Lines written to the spool's ``<stream>.jsonl`` files (a listener's hello and samples)."""
    return sum(len(f.read_bytes().splitlines()) for f in spool.glob(f"*/{stream}.jsonl"))


def _wait_for(what, timeout: float = 180.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_node_makes_the_run_killed_and_sync_recovers_its_spool(tmp_path: Path) -> None:
    """Node 1 dies mid-run (its agent, script and listeners SIGKILLed, as a host lost): the
    run is KILLED naming node 1, node 0's samples are stored, and `radtrack sync` on node 1
    stores what its spool kept, exactly once."""
    port = _port()
    hold = tmp_path / "hold"
    nodes = [start_node(tmp_path, k, port, "--hold", str(hold), "--step-s", "0.05")
             for k in (0, 1)]
    spool1 = tmp_path / "node1" / "spool"
    # node 1 trains and its sink is bound to the run (meta.json names it)
    _wait_for(lambda: Path(f"{hold}.1").exists() and list(spool1.glob("*/meta.json")))
    bound = spooled_lines(spool1, "node1.top")
    _wait_for(lambda: spooled_lines(spool1, "node1.top") >= bound + 3)  # a few more samples
    for pid in _tree(nodes[1].pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    finish(tmp_path, 1, nodes[1], 30)
    out0 = finish(tmp_path, 0, nodes[0])
    assert nodes[0].returncode == 1, out0

    client, run = the_run(tmp_path)
    assert run.info.status == "KILLED", out0
    tags = run.data.tags
    assert "node1" in tags[schema.NODES_FAILED] and "lost" in tags[schema.NODES_FAILED]
    assert tags[schema.node_tag(1, "status")] == "KILLED"
    assert len(client.get_metric_history(run.info.run_id, "system/top/cpu_pct")) >= 2

    # what node 1's spool kept, before sync
    folder = next(p.parent for p in spool1.glob("*/meta.json"))
    assert json.loads((folder / "meta.json").read_text())["run_id"] == run.info.run_id
    from radtrack.store.recovery import read_spool

    spooled = int(read_spool(folder / "node1.top.jsonl")["node1/top/cpu_pct"].notna().sum())
    assert spooled >= 2
    sync = run_cli("sync", env=_reader_env(tmp_path, 1), cwd=tmp_path / "node1")  # in-process
    assert sync.returncode == 0, sync.stdout + sync.stderr
    history = client.get_metric_history(run.info.run_id, "system/node1/top/cpu_pct")
    assert len(history) == spooled  # every sample once: none lost, none twice
    assert len({(m.timestamp, m.step) for m in history}) == spooled
    after = client.get_run(run.info.run_id)
    assert after.info.status == "KILLED"  # sync leaves node 0's verdict as it is
    assert "telemetry/node1.top.parquet" in {
        a.path for a in client.list_artifacts(run.info.run_id, "telemetry")}
    assert "summary/node1/top/cpu_pct/mean" in after.data.metrics
    assert not folder.exists()


def test_ctrl_c_on_node_0_stops_every_node_and_the_run_is_killed(tmp_path: Path) -> None:
    """SIGINT to node 0's launcher (Ctrl-C): it stops its own part and tells node 1 to stop;
    both parts end KILLED and so does the run, with every node's samples stored."""
    port = _port()
    hold = tmp_path / "hold"  # never created: the ranks step until they are stopped
    nodes = [start_node(tmp_path, k, port, "--hold", str(hold), "--step-s", "0.05")
             for k in (0, 1)]
    _wait_for(lambda: Path(f"{hold}.0").exists() and Path(f"{hold}.1").exists())
    os.kill(nodes[0].pid, signal.SIGINT)
    out0 = finish(tmp_path, 0, nodes[0])
    out1 = finish(tmp_path, 1, nodes[1])
    assert nodes[0].returncode == 130, out0
    assert nodes[1].returncode == 1 and "node 0's launcher was stopped" in out1, out1
    client, run = the_run(tmp_path)
    assert run.info.status == "KILLED"
    tags = run.data.tags
    assert tags[schema.node_tag(0, "status")] == tags[schema.node_tag(1, "status")] == "KILLED"
    assert "node1" in tags[schema.NODES_FAILED] and "stopped" in tags[schema.node_tag(1, "why")]
    for key in ("system/top/cpu_pct", "system/node1/top/cpu_pct"):
        assert len(client.get_metric_history(run.info.run_id, key)) >= 2, key
