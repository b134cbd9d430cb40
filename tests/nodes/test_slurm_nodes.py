"""A sheet row over two nodes through the SLURM executor (column Nodes = 2): one batch job over
two nodes, srun one task per node, a 2-process gloo DDP script; one run with both nodes'
series, per-node and total figures, true status.

The cluster: SLURM's multiple-slurmd mode on this host: one slurmctld and two slurmd
(``slurmd -N radnode1`` / ``-N radnode2``), both NodeAddr=127.0.0.1 with a port each
(Debian's slurm-wlm 22.05 runs them so), started by this module's fixture; it skips,
visibly, without root or SLURM (scripts/ensure-slurm.sh installs it as root).
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster, _free_port, _which, wait_for, why_no_slurm
from support import run_cli
from test_nodes_by_hand import DDP, the_run

from radtrack.vocab import schema

pytestmark = pytest.mark.slow
NODES = ("radnode1", "radnode2")


def _config(root: Path) -> Path:
    (root / "state").mkdir()
    for node in NODES:
        (root / f"spool-{node}").mkdir()
    host = socket.gethostname()
    lines = [f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={host} Port={_free_port()} "
             "CPUs=8 RealMemory=8000 State=UNKNOWN" for n in NODES]
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=radtrack2
SlurmctldHost={host}(127.0.0.1)
MailProg=/bin/true
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root / 'munge.sock'}
CredType=cred/munge
StateSaveLocation={root / 'state'}
SlurmdSpoolDir={root}/spool-%n
SlurmctldPidFile={root / 'slurmctld.pid'}
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root / 'slurmctld.log'}
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
MinJobAge=600
KillWait=5
InactiveLimit=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
{chr(10).join(lines)}
PartitionName=debug Nodes={NODES[0][:-1]}[1-2] Default=YES MaxTime=INFINITE State=UP
""")
    return conf


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[SlurmCluster]:
    reason = why_no_slurm()
    if reason:
        pytest.skip(f"slurm: {reason}")
    root = Path(tempfile.mkdtemp(prefix="radtrack-slurm2-"))
    os.chmod(root, 0o755)
    cluster = SlurmCluster(root, _config(root))
    env = {**os.environ, **cluster.env}
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o600)
    (root / "munge").mkdir(mode=0o700)
    try:
        cluster.procs.append(subprocess.Popen(
            [_which("munged"), "--foreground", "--force", f"--key-file={key}",
             f"--socket={root / 'munge.sock'}", f"--pid-file={root / 'munge' / 'pid'}",
             f"--seed-file={root / 'munge' / 'seed'}", f"--log-file={root / 'munged.log'}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: (root / "munge.sock").exists(), 10, "munged's socket")
        cluster.procs.append(subprocess.Popen(
            [_which("slurmctld"), "-D", "-i", "-f", str(cluster.conf)], env=env,
            stdout=subprocess.DEVNULL, stderr=open(root / "slurmctld.err", "w")))
        for node in NODES:
            cluster.procs.append(subprocess.Popen(
                [_which("slurmd"), "-D", "-N", node, "-f", str(cluster.conf)], env=env,
                stdout=subprocess.DEVNULL, stderr=open(root / f"slurmd-{node}.err", "w")))

        def idle() -> bool:
            p = cluster.run("sinfo", "-h", "-N", "-o", "%T")
            return p.returncode == 0 and p.stdout.split() == ["idle", "idle"]

        wait_for(idle, 60, "two idle nodes (multiple-slurmd mode)")
    except (RuntimeError, OSError) as exc:
        cluster.stop()
        pytest.skip(f"slurm: two slurmd on this host did not come up: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


def _agent_of(node: str, job_name: str) -> int | None:
    """The pid of the node agent task SLURM runs as ``node`` for job ``job_name``
    (multiple-slurmd: one host, both jobs' agents on it)."""
    import psutil

    for p in psutil.process_iter(["cmdline"]):
        try:
            if "radtrack.executors.slurm_nodes" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("SLURMD_NODENAME") == node and \
                    p.environ().get("SLURM_JOB_NAME") == job_name and \
                    "srun" not in (p.info["cmdline"] or [""])[0]:
                return p.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


def test_rows_over_two_slurm_nodes_one_finished_one_with_a_dead_node(two_nodes: SlurmCluster,
                                                                     tmp_path: Path) -> None:
    """One submission, two workloads, each a job over both nodes. "multi" trains 5 steps: one
    run with both nodes' series, per-node and total figures, FINISHED. "dead" holds until
    node 1's task (agent, script, listeners) is SIGKILLed mid-run, as a node lost: its run is
    KILLED naming node 1, node 0's samples are stored, and `radtrack sync` on the job's
    RADTRACK_JOB_HOME (shared here: both slurmd share this host) stores node 1's spool once."""
    import signal

    import psutil
    from test_nodes_by_hand import _wait_for, spooled_lines

    from radtrack.store.recovery import read_spool

    hold = tmp_path / "hold"
    sheet = tmp_path / "multi.csv"
    with sheet.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Experiment", "Workload", "Devices", "Collocation", "File", "Listeners",
                    "Params", "Nodes"])
        w.writerow(["multi", "1", "", "-", str(DDP), "top", "--steps 5", "2"])
        w.writerow(["dead", "1", "", "-", str(DDP), "top", f"--hold {hold} --step-s 0.05", "2"])
    job_home = tmp_path / "job"
    env = {**os.environ, **two_nodes.env, "PYTHONUNBUFFERED": "1",
           "RADTRACK_HOME": str(tmp_path / "home"), "RADTRACK_JOB_HOME": str(job_home),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    # (the dry run's "--nodes=2 --ntasks-per-node=1": tests/nodes/test_nodes_contract.py)
    submitter = subprocess.Popen([sys.executable, "-m", "radtrack", str(sheet), "--executor",
                                  "slurm", "--shared-fs", "--interval", "0.1"], env=env,
                                 cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
    spool = job_home / "spool"
    try:
        # both "dead" ranks step; its node 1's spool is bound to the run (meta.json names it)
        _wait_for(lambda: Path(f"{hold}.1").exists(), timeout=300)
        _wait_for(lambda: _node1_folder(spool, _row_run_id(tmp_path, "dead")) is not None,
                  every=0.5)
        bound = spooled_lines(spool, "node1.top")
        _wait_for(lambda: spooled_lines(spool, "node1.top") >= bound + 3)  # a few more samples
        agent = _agent_of(NODES[1], "radtrack-dead-1")
        assert agent is not None
        tree = [agent, *(c.pid for c in psutil.Process(agent).children(recursive=True))]
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out = submitter.communicate(timeout=300)[0]
    finally:
        if submitter.poll() is None:
            submitter.kill()
    outs = "".join(p.read_text() for p in tmp_path.glob(".multi*.slurm/*.out"))
    assert submitter.returncode == 1, out + outs  # one workload KILLED
    assert "node 0 = radnode1" in outs and "node radnode2: node 1 of 2" in outs, outs
    lines = [x for x in sheet.read_text().splitlines() if x.startswith(("multi,", "dead,"))]
    assert "FINISHED" in lines[0] and "KILLED" in lines[1], lines

    client, run = the_run(tmp_path)
    assert run.info.status == "FINISHED", outs
    tags, metrics = run.data.tags, run.data.metrics
    assert tags[schema.NODES] == "2" and tags.get(schema.SLURM_JOB_ID)
    assert tags[schema.node_tag(1, "status")] == "FINISHED"
    assert len(client.get_metric_history(run.info.run_id, "system/top/cpu_pct")) >= 2
    assert len(client.get_metric_history(run.info.run_id, "system/node1/top/cpu_pct")) >= 2
    for key in (schema.node_summary_key(0, "duration_s"), schema.node_summary_key(1, "duration_s"),
                schema.nodes_total_key("duration_s")):
        assert metrics[key] > 0, key

    client, run = the_run(tmp_path, "dead")
    assert run.info.status == "KILLED", outs
    assert "node1" in run.data.tags[schema.NODES_FAILED] and "lost" in run.data.tags[schema.NODES_FAILED]
    assert len(client.get_metric_history(run.info.run_id, "system/top/cpu_pct")) >= 2
    folders = [m.parent for m in spool.glob("*/meta.json") if (m.parent / "node1.top.jsonl").exists()]
    assert folders == [_node1_folder(spool, run.info.run_id)], outs  # "multi"'s: stored, gone
    spooled = int(read_spool(folders[0] / "node1.top.jsonl")["node1/top/cpu_pct"].notna().sum())
    # in-process (support.run_cli): the store never went away; only the home differs
    sync = run_cli("sync", env={**two_nodes.env, "RADTRACK_HOME": str(job_home),
                                "MLFLOW_TRACKING_URI": env["MLFLOW_TRACKING_URI"]}, cwd=tmp_path)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    history = client.get_metric_history(run.info.run_id, "system/node1/top/cpu_pct")
    assert len(history) == spooled and len({(m.timestamp, m.step) for m in history}) == spooled
    assert client.get_run(run.info.run_id).info.status == "KILLED"
    assert not folders[0].exists()


def _row_run_id(tmp: Path, experiment: str) -> str:
    """The row run of ``experiment`` once it exists, else ""."""
    from mlflow import MlflowClient

    if not (tmp / "mlflow.db").exists():  # not yet made by the launcher: MLflow would make it here
        return ""
    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    try:
        exp = client.get_experiment_by_name(experiment)
        rows = client.search_runs([exp.experiment_id],
                                  f"tags.`{schema.ROLE}` = '{schema.ROLE_ROW}'") if exp else []
    except Exception:  # noqa: BLE001 - the store being made by the jobs: asked again
        return ""
    return rows[0].info.run_id if rows else ""


def _node1_folder(spool: Path, run_id: str) -> Path | None:
    """Node 1's spool folder of run ``run_id``, once bound to it (meta.json names it)."""
    for meta in spool.glob("*/meta.json"):
        try:
            bound = json.loads(meta.read_text()).get("run_id")
        except (OSError, ValueError):  # being written: asked again
            continue
        if run_id and bound == run_id and (meta.parent / "node1.top.jsonl").exists():
            return meta.parent
    return None
