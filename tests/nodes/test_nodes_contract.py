"""Multi-node rows without a training script: node-scoped names, the clock estimate, one status
from every node's end, the node sink's scoping, the rendezvous' refusals and the CLI's."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from servers import free_port as _port  # outside the ephemeral ports

from radtrack.errors import RadtrackError
from radtrack.listeners.protocol import Hello, Sample, Samples, decode
from radtrack.nodes import outcome
from radtrack.nodes.clock import Clock, clock_from
from radtrack.nodes.options import parse_master
from radtrack.nodes.rendezvous import Master, NodeEnd, NodeLink
from radtrack.nodes.sink import scoped
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key, node, stored", [
    ("top/cpu_pct", 1, "node1/top/cpu_pct"),
    ("system/smi/gpu0/power_w", 3, "system/node3/smi/gpu0/power_w"),
    ("summary/top/proc/rss_mib/max", 12, "summary/node12/top/proc/rss_mib/max"),
    ("summary/duration_s", 2, "summary/node2/duration_s"),
])
def test_node_scoped_keys_read_back(key: str, node: int, stored: str) -> None:
    assert schema.node_scoped(key, node) == stored
    assert schema.split_node(stored) == (node, key)
    assert schema.split_node(key) == (None, key)  # node 0 and one-node runs: no node segment


def test_keys_that_only_look_scoped_are_not() -> None:
    for key in ("top/node1/cpu_pct", "system/cpu_utilization_percentage", "nodes/x",
                "summary/nodes/gpu_energy_j", "node1", "system/node1"):
        assert schema.split_node(key) == (None, key), key
    assert schema.split_node_stream("node2.smi") == (2, "smi")
    assert schema.split_node_stream("smi") == (None, "smi")
    assert schema.node_stream("top", 0) == "top" and schema.node_stream("top", 4) == "node4.top"
    assert schema.node_tag(1, schema.EXIT_CODE) == "radtrack.node1.exit_code"


def test_the_clock_estimate_takes_the_shortest_round_trip() -> None:
    offset = 2.5  # master = node + 2.5 s
    rounds = []
    for out_delay, back_delay in ((0.030, 0.001), (0.002, 0.002), (0.001, 0.050)):
        t1 = 100.0
        t2 = t1 + offset + out_delay
        t3 = t2 + 0.0001
        t4 = t3 - offset + back_delay
        rounds.append((t1, t2, t3, t4))
    clock = clock_from(rounds)
    assert clock.offset_s == pytest.approx(offset, abs=1e-9)  # the symmetric exchange
    assert clock.error_s == pytest.approx(0.002)  # half its round trip
    asym = clock_from(rounds[:1])
    assert abs(asym.offset_s - offset) <= asym.error_s  # the bound holds however it is skewed


def _end(node: int, status: str = "FINISHED", code: int | None = 0, **kw) -> NodeEnd:
    return NodeEnd(node, f"host{node}", status, code, started=10.0 + node, ended=20.0 + node, **kw)


def test_every_node_finished_is_finished() -> None:
    status, tags = outcome.decide({0: _end(0), 1: _end(1)})
    assert status == "FINISHED" and schema.NODES_FAILED not in tags
    assert tags[schema.NODES] == "2" and tags[schema.node_tag(1, "host")] == "host1"


def test_a_failed_or_lost_node_decides_the_status_and_is_named() -> None:
    status, tags = outcome.decide({0: _end(0), 1: _end(1, "FAILED", 3)})
    assert status == "FAILED"
    assert tags[schema.NODES_FAILED] == "node1 (host1): exit 3"
    status, tags = outcome.decide({0: _end(0, "FAILED", 1), 1: "lost: connection closed",
                                   2: _end(2, "KILLED", -9)})
    assert status == "KILLED"
    assert tags[schema.NODES_FAILED] == ("node0 (host0): exit 1; node1: lost: connection closed; "
                                         "node2 (host2): killed by signal 9")
    assert tags[schema.node_tag(1, "status")] == "KILLED"


def test_a_part_that_died_after_node_0_was_stopped_is_said_to_have_stopped_with_it() -> None:
    """A rank of a distributed script dies of its peer's end (gloo: SIGABRT) before node 0's
    stop reaches its node: the part stopped with node 0, its own end said in brackets; a part
    that failed well before the stop keeps its own reason."""
    stopped = _end(0, "KILLED", -2, stopped_by="signal")
    status, tags = outcome.decide({0: stopped, 1: _end(1, "KILLED", -6)}, stopped_at=20.5)
    assert status == "KILLED"
    assert tags[schema.node_tag(1, "why")] == "stopped with node 0 (its script: killed by signal 6)"
    status, tags = outcome.decide({0: stopped, 1: _end(1, "FAILED", 3)}, stopped_at=25.0)
    assert tags[schema.node_tag(1, "why")] == "exit 3"  # ended at 21, long before the stop
    status, tags = outcome.decide({0: stopped, 1: _end(1, "FAILED", 3)})
    assert tags[schema.node_tag(1, "why")] == "exit 3"  # node 0 was never stopped


def test_figures_per_node_and_in_all() -> None:
    ends = {0: _end(0, energy_j=100.0), 1: _end(1, energy_j=50.0)}
    got = outcome.figures(ends, co2e_g_per_j=0.001)
    assert got[schema.node_summary_key(1, "duration_s")] == 10.0
    assert got[schema.nodes_total_key("duration_s")] == 11.0  # node 0's start to node 1's end
    assert got[schema.nodes_total_key("gpu_energy_j")] == 150.0
    assert got[schema.nodes_total_key("co2e_g")] == pytest.approx(0.15)
    partial = outcome.figures({0: _end(0, energy_j=100.0), 1: "lost"})
    assert schema.nodes_total_key("gpu_energy_j") not in partial  # no total of a part
    assert partial[schema.node_summary_key(0, "gpu_energy_j")] == 100.0


def test_a_nodes_lines_are_scoped_and_on_the_masters_clock() -> None:
    s = scoped(Sample(10.0, {"top/cpu_pct": 5.0}, {"top/x": 3}), 2, 0.5)
    assert s == Sample(10.5, {"node2/top/cpu_pct": 5.0}, {"top/x": 3})  # resume: the listener's
    b = scoped(Samples([1.0, 2.0], {"smi/gpu0/power_sample_w": [1.0, None]}), 1, -1.0)
    assert b.t == [0.0, 1.0] and list(b.values) == ["node1/smi/gpu0/power_sample_w"]
    h = scoped(decode('{"type": "hello", "listener": "top", "metrics": [{"key": "top/cpu_pct", '
                      '"unit": "%"}], "tags": {}}'), 1, 0.0)
    assert isinstance(h, Hello) and h.metrics[0]["key"] == "node1/top/cpu_pct"


def test_readers_label_a_nodes_figures_as_node_0s_with_the_node() -> None:
    mine, theirs = describe("system/top/cpu_pct"), describe("system/node1/top/cpu_pct")
    assert (theirs.scope, theirs.unit, theirs.role) == (mine.scope, mine.unit, mine.role)
    assert theirs.label == f"node1 {mine.label}" and theirs.key == "node1/top/cpu_pct"
    assert describe("summary/nodes/gpu_energy_j").unit == "J"


def test_node_options_checked_together() -> None:
    from radtrack.nodes.launch import check

    assert check(None, None, None) is None
    assert check(2, 1, "h:5") == ("h", 5)
    with pytest.raises(RadtrackError, match="runs plain"):
        check(2, 0, "h", "mps")
    with pytest.raises(RadtrackError, match="--nodes must be >= 1"):
        check(0, 0, "h")


def test_master_parsing() -> None:
    assert parse_master("10.0.0.1") == ("10.0.0.1", 29450)
    assert parse_master("gpu-a:1234") == ("gpu-a", 1234)
    assert parse_master("[::1]:99") == ("::1", 99)
    for bad in ("host:0", "host:x", ":80", "host:70000"):
        with pytest.raises(RadtrackError, match="--master"):
            parse_master(bad)


def test_the_rendezvous_admits_each_node_once_and_names_those_missing() -> None:
    port = _port()
    lines: list[str] = []
    master = Master("127.0.0.1", port, 3, lines.append)
    try:
        link = NodeLink.join("127.0.0.1", port, 1, 3, timeout=10)
        assert isinstance(link.clock, Clock) and link.clock.error_s >= 0
        with pytest.raises(RadtrackError, match="already joined"):
            NodeLink.join("127.0.0.1", port, 1, 3, timeout=10)
        with pytest.raises(RadtrackError, match="--nodes 4"):
            NodeLink.join("127.0.0.1", port, 2, 4, timeout=10)
        with pytest.raises(RadtrackError, match=r"node\(s\) 2 did not join"):
            master.wait_joined(0.5)
        assert link.started.wait(5) and "did not join" in link.aborted
        # an end reported, then a node whose connection drops without one
        link2 = NodeLink.join("127.0.0.1", port, 2, 3, timeout=10)
        assert link.report(_end(1))
        link2.close()
        ends = master.wait_ends(lambda: False)
        assert isinstance(ends[1], NodeEnd) and ends[1].host == "host1"
        assert isinstance(ends[2], str) and ends[2].startswith("lost")
    finally:
        master.close()


def test_a_stop_from_the_master_reaches_the_node() -> None:
    port = _port()
    master = Master("127.0.0.1", port, 2, lambda _: None)
    try:
        link = NodeLink.join("127.0.0.1", port, 1, 2, timeout=10)
        stopped = threading.Event()
        link.on_stop = lambda why: stopped.set()
        master.wait_joined(5)
        master.broadcast(op="start", master_addr="127.0.0.1", master_port=1)
        master.broadcast(op="run", run_id="abc", experiment_id="0")
        master.broadcast(op="stop", why="test")
        assert stopped.wait(5) and link.has_run.wait(5) and link.run["run_id"] == "abc"
        assert link.start_info["master_port"] == 1
    finally:
        master.close()


def _cli(tmp: Path, *args: str, env: dict[str, str] | None = None):
    import os
    import subprocess

    script = tmp / "s.py"
    script.write_text("print('ran')\n")
    full = {**os.environ, "RADTRACK_HOME": str(tmp / "home"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'm.db'}", **(env or {})}
    return subprocess.run([sys.executable, "-m", "radtrack", "--wait-end", *args, str(script)],
                          cwd=tmp, env=full, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--nodes", "2"], "--nodes, --node-rank and --master go together"),
    (["--nodes", "2", "--node-rank", "2", "--master", "localhost"], "--node-rank must be 0..1"),
    (["--nodes", "2", "--node-rank", "1", "--master", "localhost:0"], "--master 'localhost:0'"),
])
def test_bad_node_options_are_refused_before_anything_runs(tmp_path: Path, args, message) -> None:
    proc = _cli(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "ran" not in proc.stdout
    assert not (tmp_path / "m.db").exists() or "mlflow" not in proc.stderr.lower()


def test_node_0_alone_names_the_nodes_that_never_joined(tmp_path: Path) -> None:
    proc = _cli(tmp_path, "--nodes", "2", "--node-rank", "0", "--master", f"127.0.0.1:{_port()}",
                env={"RADTRACK_NODES_JOIN_S": "1"})
    assert proc.returncode != 0
    assert "node(s) 1 did not join" in proc.stderr and "ran" not in proc.stdout


def _sheet(tmp: Path, nodes: str = "", collocation: str = "-", rows: int = 1,
           devices: str = "") -> Path:
    script = tmp / "s.py"
    script.write_text("print('ran')\n")
    sheet = tmp / "multi.csv"
    lines = ["Experiment,Workload,Devices,Collocation,File,Listeners,Params,Nodes"]
    lines += [f"multi,1,{devices},{collocation},{script},top,,{nodes}"] * rows
    sheet.write_text("\n".join(lines) + "\n")
    return sheet


def _radtrack(tmp: Path, *args: str):
    import os
    import subprocess

    env = {**os.environ, "RADTRACK_HOME": str(tmp / "home"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'm.db'}"}
    return subprocess.run([sys.executable, "-m", "radtrack", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)


def test_slurm_jobs_of_rows_over_nodes_from_the_column_or_the_flag(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, nodes="3")
    proc = _radtrack(tmp_path, str(sheet), "--executor", "slurm", "--shared-fs", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "--nodes=3 --ntasks-per-node=1" in proc.stdout and "on each of 3 nodes" in proc.stdout
    plain = _sheet(tmp_path)
    proc = _radtrack(tmp_path, str(plain), "--executor", "slurm", "--shared-fs", "--nodes", "2",
                     "--dry-run")
    assert "--nodes=2 --ntasks-per-node=1" in proc.stdout, proc.stderr
    proc = _radtrack(tmp_path, str(plain), "--executor", "slurm", "--nodes", "2",
                     "--node-rank", "0", "--master", "h", "--shared-fs", "--dry-run")
    assert proc.returncode == 2 and "--nodes N (or a Nodes column) alone" in proc.stderr


@pytest.mark.parametrize("collocation, rows, message, column", [
    ("mps", 1, "runs plain", "Collocation"),
    ("-", 2, "one SLURM job of its own", "Nodes"),
])
def test_slurm_refuses_a_shared_row_over_nodes(tmp_path: Path, collocation, rows, message,
                                               column) -> None:
    sheet = _sheet(tmp_path, nodes="2", collocation=collocation, rows=rows, devices="0")
    proc = _radtrack(tmp_path, str(sheet), "--executor", "slurm", "--shared-fs", "--dry-run")
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert f"column {column}" in proc.stderr


def test_a_local_sheet_refuses_a_row_over_nodes_naming_the_cell(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, nodes="2")
    proc = _radtrack(tmp_path, "--wait-end", str(sheet))
    assert proc.returncode == 2, proc.stderr
    assert f"{sheet}:2: column Nodes" in proc.stderr and "ran" not in proc.stdout
    bad = _sheet(tmp_path, nodes="0")
    proc = _radtrack(tmp_path, "--wait-end", str(bad))
    assert proc.returncode == 2 and "Nodes" in proc.stderr
