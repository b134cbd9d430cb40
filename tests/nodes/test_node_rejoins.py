"""Fault: a node agent stopped (Ctrl-C) before the start, then started again (docs/
architecture.md "Faults"). With `--nodes 3`, node 1 joins, is stopped while node 0 waits for
node 2, and says so in one line; started again, it joins again, node 2 joins, and the run
holds every node's part, FINISHED. Three `radtrack` processes on loopback, one SQLite store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from servers import free_port as _port  # outside the ephemeral ports

from radtrack.vocab import schema


def _node(tmp: Path, node: int, port: int, script: Path, tag: str = "") -> tuple[subprocess.Popen[str], Path]:
    home = tmp / f"node{node}"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RADTRACK_HOME": str(home),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}", "RADTRACK_NODES_JOIN_S": "120"}
    log = tmp / f"node{node}{tag}.log"
    argv = [sys.executable, "-m", "radtrack", "--wait-end", "-e", "rejoin", "-l", "none",
            "--nodes", "3", "--node-rank", str(node), "--master", f"127.0.0.1:{port}", str(script)]
    with log.open("w") as out:  # a file, not a pipe: nobody reads it while they run
        proc = subprocess.Popen(argv, cwd=home, env=env, text=True, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


def _wait_for(log: Path, text: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def test_a_node_stopped_before_the_start_says_so_and_may_join_again(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    script = tmp_path / "s.py"
    script.write_text("import os\nprint('ran on node', os.environ.get('RANK'))\n")
    port = _port()
    procs = []
    try:
        master, master_log = _node(tmp_path, 0, port, script)
        procs.append(master)
        first, first_log = _node(tmp_path, 1, port, script, "-first")
        procs.append(first)
        _wait_for(first_log, "joined 127.0.0.1", first)
        os.killpg(first.pid, signal.SIGINT)  # Ctrl-C in node 1's terminal
        assert first.wait(60) == 130
        said = first_log.read_text()
        assert "node 1: stopped before the start; nothing ran" in said, said
        _wait_for(master_log, "node 1 (", master)
        again, again_log = _node(tmp_path, 1, port, script, "-again")
        procs.append(again)
        _wait_for(master_log, "node 1 joins again", master)
        third, third_log = _node(tmp_path, 2, port, script)
        procs.append(third)
        codes = [p.wait(240) for p in (master, again, third)]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    logs = {name: log.read_text() for name, log in
            (("master", master_log), ("again", again_log), ("third", third_log))}
    assert codes == [0, 0, 0], logs
    assert "refused" not in logs["master"] + logs["again"] and "did not join" not in logs["master"]
    assert "left before the start; it may join again" in logs["master"], logs["master"]
    assert "ran on node 1" in logs["again"] and "ran on node 2" in logs["third"]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("rejoin")
    rows = client.search_runs([exp.experiment_id], f"tags.`{schema.ROLE}` = '{schema.ROLE_ROW}'")
    assert len(rows) == 1 and rows[0].info.status == "FINISHED"
    metrics = rows[0].data.metrics
    for node in (1, 2):
        assert f"summary/node{node}/duration_s" in metrics, sorted(metrics)
