"""A sheet row over several nodes (its ``Nodes`` column) as one SLURM job.

The job asks for ``--nodes=N --ntasks-per-node=1`` (radtrack/executors/slurm.py). Its batch
step, on the job's batch host, picks node 0 (itself) and a free rendezvous port there, then
starts one task per node with ``srun``; each task is that node's agent of a multi-node row
(radtrack/nodes/launch.py), run exactly as by hand: ``--nodes N --node-rank K --master
ADDR:PORT`` with ADDR the batch host's ``NodeAddr``. Node 0's task creates the row run and
decides its status from every node's end; the step's exit code is srun's (the tasks'
worst). Each task maps the row's Devices onto its own node's GPUs and spools in its node's
``$RADTRACK_JOB_HOME``. When SLURM ends the job it signals every task: node 0 stops the
row and stores it KILLED as on one node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

from radtrack import own_threads
from radtrack.errors import RadtrackError
from radtrack.executors.slurm_job import (
    allocated_devices,
    default_job_home,
    fit_grace,
    map_devices,
    spec_from_json,
)
from radtrack.script import env as renv


def say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


def node_names(nodelist: str) -> list[str]:
    """The job's nodes in SLURM's order (``scontrol show hostnames radnode[1-2]``)."""
    p = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                       text=True, timeout=30)
    names = p.stdout.split()
    if p.returncode != 0 or not names:
        raise RadtrackError(f"scontrol show hostnames {nodelist!r} failed: {p.stderr.strip()}")
    return names


def node_addr(name: str) -> str:
    """Where the other nodes reach node ``name``: its ``NodeAddr`` (``scontrol show node``),
    else the name itself."""
    p = subprocess.run(["scontrol", "show", "node", name, "-o"], capture_output=True, text=True,
                       timeout=30)
    m = re.search(r"\bNodeAddr=(\S+)", p.stdout)
    return m.group(1) if p.returncode == 0 and m else name


def rank_of(me: str, master: str, names: list[str]) -> int:
    """Node 0 is the batch host; the others count up in the job's node order."""
    if me == master:
        return 0
    others = [n for n in names if n != master]
    if me not in others:
        raise RadtrackError(f"node {me} is not among the job's nodes {','.join(names)}")
    return 1 + others.index(me)


def main(payload: str) -> int:
    """The batch step: one task per node through srun; srun's exit code."""
    from radtrack.nodes.options import free_port

    data = json.loads(payload)
    own_threads.limit()  # radtrack's own process (radtrack/own_threads.py); rows get the user's
    spec = spec_from_json(data["rows"][0])
    job = os.environ.get("SLURM_JOB_ID", "?")
    nodes = int(os.environ.get("SLURM_NNODES") or 0)
    if nodes != spec.nodes:
        say(f"job {job}: the row asks for {spec.nodes} nodes (Nodes), SLURM gave {nodes or '?'}")
        return 2
    me = os.environ.get("SLURMD_NODENAME", "")
    addr = node_addr(me) if me else "127.0.0.1"
    master = f"{addr}:{free_port(addr)}"
    say(f"job {job}: {spec.experiment}-{spec.workload} over {nodes} nodes "
        f"({os.environ.get('SLURM_JOB_NODELIST', '?')}); node 0 = {me} ({master})")
    payload = json.dumps({**data, "master": master, "master_node": me})
    argv = ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1",
            "--kill-on-bad-exit=0", sys.executable, "-m", __name__, payload]
    # SLURM signals every task itself when it ends the job; the step only waits for srun
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return subprocess.call(argv)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def task(payload: str) -> int:
    """One task (``python -m radtrack.executors.slurm_nodes PAYLOAD``): this node's agent."""
    from radtrack.executors.slurm_job import _check_host
    from radtrack.executors.slurm_queue import kill_wait
    from radtrack.nodes.launch import launch
    from radtrack.store.handle import StoreHandle
    from radtrack.store.tracking import LAUNCH_ID_ENV, with_password

    data = json.loads(payload)
    os.environ[renv.HOME] = data.get("home") or default_job_home()
    if data.get("launch_id"):
        os.environ[LAUNCH_ID_ENV] = data["launch_id"]
    from radtrack.store.mlflow_client import radtrack_process

    radtrack_process()
    uri = with_password(data["uri"])
    spec = spec_from_json(data["rows"][0])
    me = os.environ.get("SLURMD_NODENAME", "")
    try:
        names = node_names(os.environ.get("SLURM_JOB_NODELIST", me))
        rank = rank_of(me, data["master_node"], names)
        map_devices([spec], allocated_devices(os.environ))
        _check_host([spec])
    except RadtrackError as exc:
        say(f"node {me}: {exc}")
        return 2
    grace, note = fit_grace(float(data.get("grace", 10.0)), kill_wait())
    if note:
        say(f"node {me}: {note}")
    say(f"node {me}: node {rank} of {spec.nodes}; spool in {renv.radtrack_home() / 'spool'} (if "
        f"this node dies: 'RADTRACK_HOME={renv.radtrack_home()} radtrack sync' on it)")
    try:
        return launch(spec, StoreHandle(uri), grace, spec.nodes, rank, data["master"])
    except RadtrackError as exc:
        say(f"node {me}: {exc}")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(task(sys.argv[1]))
