"""A real single-node SLURM for the SLURM executor tests: munged + slurmctld + slurmd.

Registered from conftest.py (``pytest_plugins``). The session-scoped fixture
``slurm_cluster`` writes slurm.conf/gres.conf into a temp folder, starts the three daemons
on 127.0.0.1 (free ports, their own munge key and socket), waits until the node is idle and
yields a ``SlurmCluster`` whose ``env`` (SLURM_CONF, PATH) the CLI needs; the daemons stop
at the session's end. Two fake GPUs are char devices made with mknod and named in
gres.conf ``File=`` lines, so ``--gres=gpu:N`` allocates them and SLURM sets
``CUDA_VISIBLE_DEVICES``/``SLURM_JOB_GPUS`` as on a GPU node.

Without root, without Debian's slurm-wlm + munge (scripts/ensure-slurm.sh installs them as
root) or when the daemons do not come up, the fixture skips with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from servers import free_port as _free_port  # outside the ephemeral ports

NODE = "radnode"
FAKE_GPUS = 2
# The node declares at least this many CPUs whatever the host has (SlurmdParameters=
# config_overrides): radtrack's default CPU request of a co-located workload (2 a row + 1)
# must fit on a 2-core test host. Nothing binds CPUs here (TaskPlugin=task/none).
NODE_CPUS = max(os.cpu_count() or 2, 16)
NODE_MEMORY_MB = 16000
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol")


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")


def why_no_slurm() -> str | None:
    """None when a single-node SLURM can be started here, else why not."""
    missing = [d for d in DAEMONS if _which(d) is None]
    if missing:
        return (f"no {', '.join(missing)} (Debian packages slurm-wlm and munge; "
                "scripts/ensure-slurm.sh installs them when run as root)")
    if os.geteuid() != 0:
        return "the single-node SLURM (slurmd, mknod'ed fake GPUs) needs root"
    return None


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What a command needs to talk to this cluster."""
        return {"SLURM_CONF": str(self.conf),
                "PATH": f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"}

    def run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), env={**os.environ, **self.env}, capture_output=True,
                              text=True, timeout=timeout)

    def jobs(self) -> list[str]:
        """Ids of every job the controller still knows, any state."""
        p = self.run("squeue", "-h", "--states=all", "-o", "%i")
        return p.stdout.split()

    def live_jobs(self) -> list[str]:
        p = self.run("squeue", "-h", "-o", "%i")
        return p.stdout.split()

    def state(self, job: str) -> str:
        p = self.run("squeue", "-h", "--states=all", "-j", job, "-o", "%T")
        return p.stdout.strip()

    def wait_idle(self, timeout: float = 60) -> None:
        """Wait until no job is pending or running (a test's leftovers end)."""
        deadline = time.monotonic() + timeout
        while self.live_jobs() and time.monotonic() < deadline:
            time.sleep(0.3)

    def log(self, name: str) -> str:
        p = self.root / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _write_config(root: Path) -> Path:
    dev = root / "dev"
    dev.mkdir()
    # Fake GPUs: char devices with /dev/null's numbers (harmless); gres.conf only needs files
    # whose major/minor it can read. SLURM numbers them from the trailing digit.
    for i in range(FAKE_GPUS):
        os.mknod(dev / f"fakegpu{i}", 0o666 | 0o020000, os.makedev(1, 3))
    (root / "state").mkdir()
    (root / "spool").mkdir()
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=radtrack
SlurmctldHost={socket.gethostname()}(127.0.0.1)
MailProg=/bin/true
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root / 'munge.sock'}
CredType=cred/munge
StateSaveLocation={root / 'state'}
SlurmdSpoolDir={root / 'spool'}
SlurmctldPidFile={root / 'slurmctld.pid'}
SlurmdPidFile={root / 'slurmd.pid'}
SlurmctldLogFile={root / 'slurmctld.log'}
SlurmdLogFile={root / 'slurmd.log'}
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
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
SlurmctldTimeout=30
SlurmdTimeout=30
SlurmdParameters=config_overrides
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} Gres=gpu:{FAKE_GPUS} State=UNKNOWN
PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
PartitionName=other Nodes={NODE} Default=NO MaxTime=INFINITE State=UP
""")
    (root / "gres.conf").write_text(
        f"NodeName={NODE} Name=gpu File={dev}/fakegpu[0-{FAKE_GPUS - 1}]\n")
    (root / "cgroup.conf").write_text("CgroupPlugin=autodetect\nIgnoreSystemd=yes\n")
    return conf


def start_cluster(timeout: float = 60.0) -> SlurmCluster:
    root = Path(tempfile.mkdtemp(prefix="radtrack-slurm-"))
    os.chmod(root, 0o755)
    conf = _write_config(root)
    cluster = SlurmCluster(root, conf)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o600)
    env = {**os.environ, **cluster.env}
    munge_dir = root / "munge"
    munge_dir.mkdir(mode=0o700)
    try:
        cluster.procs.append(subprocess.Popen(
            [_which("munged"), "--foreground", "--force", f"--key-file={key}",
             f"--socket={root / 'munge.sock'}", f"--pid-file={munge_dir / 'munged.pid'}",
             f"--seed-file={munge_dir / 'seed'}", f"--log-file={root / 'munged.log'}"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(root / "munged.err", "w")))
        wait_for(lambda: (root / "munge.sock").exists(), 10, "munged's socket")
        cluster.procs.append(subprocess.Popen(
            [_which("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
            stdout=subprocess.DEVNULL, stderr=open(root / "slurmctld.err", "w")))
        cluster.procs.append(subprocess.Popen(
            [_which("slurmd"), "-D", "-N", NODE, "-f", str(conf)], env=env,
            stdout=subprocess.DEVNULL, stderr=open(root / "slurmd.err", "w")))

        def idle() -> bool:
            for proc in cluster.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited {proc.returncode}")
            p = cluster.run("sinfo", "-h", "-N", "-o", "%T")
            states = p.stdout.split()
            return p.returncode == 0 and bool(states) and all(s == "idle" for s in states)

        wait_for(idle, timeout, "the node to be idle")
    except Exception as exc:
        cluster.stop()
        logs = "\n".join(f"--- {n}\n{cluster.log(n)[-2000:]}" for n in ("slurmctld", "slurmd"))
        for err in root.glob("*.err"):
            logs += f"\n--- {err.name}\n{err.read_text(errors='replace')[-1000:]}"
        raise RuntimeError(f"single-node SLURM did not start: {exc}\n{logs}") from exc
    return cluster


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    reason = why_no_slurm()
    if reason:
        pytest.skip(f"slurm: {reason}")
    try:
        cluster = start_cluster()
    except RuntimeError as exc:
        pytest.skip(f"slurm: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
