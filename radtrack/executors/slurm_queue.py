"""Talking to SLURM's commands: sbatch, squeue, sacct, scancel. Argument lists, no shell.

Job states come from ``squeue --states=all`` (``scontrol show job`` where squeue is not
installed) while the controller remembers the job (``MinJobAge``, 300 s by default) and
from ``sacct`` after that, when the cluster keeps accounting; a job none knows is
``UNKNOWN``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from radtrack.errors import RadtrackError

# States after which a job never runs again (sacct and squeue spell them the same).
TERMINAL = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "PREEMPTED", "CANCELLED", "NODE_FAIL",
                      "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})
UNKNOWN = "UNKNOWN"
TIMEOUT_S = 60


@dataclass(frozen=True)
class JobState:
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, PREEMPTED, CANCELLED, ...
    reason: str = ""  # SLURM's reason, e.g. "TimeLimit", "Priority"; "" when none

    @property
    def ended(self) -> bool:
        # UNKNOWN: neither the controller nor accounting knows the job any more; it is long
        # over (a controller that does not answer raises QueueError instead).
        return self.state in TERMINAL or self.state == UNKNOWN


class QueueError(RadtrackError):
    """SLURM's controller did not answer (squeue/scontrol failed for another reason than
    an unknown job id)."""


def _run(args: list[str], timeout: float = TIMEOUT_S,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False,
                          env=env)


def require(*commands: str) -> None:
    """Fail before anything is submitted when a SLURM client command is missing."""
    missing = [c for c in commands if shutil.which(c) is None]
    if missing:
        raise RadtrackError(f"--executor slurm needs SLURM's {', '.join(missing)} on PATH "
                            "(run radtrack on a machine that can submit jobs)")


def submit(args: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``sbatch --parsable ARGS`` (in ``env``: what SLURM propagates to the job); return
    the job id, or raise with sbatch's message."""
    p = _run(["sbatch", "--parsable", *args], env=env)
    job = p.stdout.strip().split(";")[0]
    if p.returncode != 0 or not job.isdigit():
        message = (p.stderr.strip() or p.stdout.strip() or f"exit {p.returncode}")
        raise RadtrackError(f"sbatch refused the job: {message}")
    return job


def cancel(jobs: list[str]) -> str:
    """``scancel JOBS``; returns scancel's complaint ('' when none)."""
    if not jobs:
        return ""
    p = _run(["scancel", *jobs])
    return p.stderr.strip() if p.returncode != 0 else ""


def _clean_state(word: str) -> str:
    # sacct writes "CANCELLED by 1000", squeue/sacct may append '+'
    return word.split()[0].rstrip("+").upper() if word.split() else UNKNOWN


def _from_squeue(jobs: list[str]) -> dict[str, JobState]:
    if shutil.which("squeue") is None:
        return {}
    out: dict[str, JobState] = {}
    p = _run(["squeue", "-h", "--states=all", "-j", ",".join(jobs), "-o", "%i|%T|%r"])
    if p.returncode != 0:
        if "invalid job id" not in p.stderr.lower():
            raise QueueError(f"squeue failed: {p.stderr.strip() or f'exit {p.returncode}'}")
        if len(jobs) > 1:
            # One job the controller forgot makes squeue refuse the whole list: one by one.
            for job in jobs:
                out.update(_from_squeue([job]))
        return out
    for line in p.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0] in jobs:
            reason = "" if parts[2] in ("None", "(null)") else parts[2]
            out[parts[0]] = JobState(_clean_state(parts[1]), reason)
    return out


def _from_scontrol(jobs: list[str]) -> dict[str, JobState]:
    """For a cluster without squeue on this host: ``scontrol show job -o`` per job."""
    if shutil.which("scontrol") is None:
        return {}
    out: dict[str, JobState] = {}
    for job in jobs:
        p = _run(["scontrol", "show", "job", "-o", job])
        if p.returncode != 0 and "invalid job id" not in p.stderr.lower():
            raise QueueError(f"scontrol failed: {p.stderr.strip() or f'exit {p.returncode}'}")
        fields = dict(f.split("=", 1) for f in p.stdout.split() if "=" in f)
        if p.returncode == 0 and fields.get("JobId") == job and "JobState" in fields:
            reason = fields.get("Reason", "")
            out[job] = JobState(_clean_state(fields["JobState"]),
                                "" if reason in ("None", "(null)") else reason)
    return out


def _from_sacct(jobs: list[str]) -> dict[str, JobState]:
    if shutil.which("sacct") is None:
        return {}
    p = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(jobs), "-o", "JobIDRaw,State,Reason"])
    if p.returncode != 0:  # e.g. "Slurm accounting storage is disabled"
        return {}
    out: dict[str, JobState] = {}
    for line in p.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] in jobs:
            reason = parts[2] if len(parts) > 2 and parts[2] not in ("None", "") else ""
            out[parts[0]] = JobState(_clean_state(parts[1]), reason)
    return out


def states(jobs: list[str]) -> dict[str, JobState]:
    """Every job's state: squeue (scontrol where squeue is missing) while the controller
    remembers the job, then sacct."""
    jobs = [j for j in dict.fromkeys(jobs) if j]
    if not jobs:
        return {}
    found = _from_squeue(jobs) if shutil.which("squeue") else _from_scontrol(jobs)
    missing = [j for j in jobs if j not in found]
    if missing:
        found.update(_from_sacct(missing))
    return {j: found.get(j, JobState(UNKNOWN, "known neither to squeue nor to sacct"))
            for j in jobs}


def kill_wait() -> float | None:
    """The cluster's ``KillWait`` (seconds between SLURM's SIGTERM and its SIGKILL when it
    ends a job: scancel, time limit, preemption) from ``scontrol show config``; None when
    scontrol is missing or does not say."""
    if shutil.which("scontrol") is None:
        return None
    try:
        p = _run(["scontrol", "show", "config"], timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^\s*KillWait\s*=\s*(\d+)", p.stdout, re.M)
    return float(m.group(1)) if p.returncode == 0 and m else None
