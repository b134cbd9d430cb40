"""The SLURM executor's row options: the sbatch options a row's workload job takes, from
sheet columns or flags (radtrack/executor_contract.py RowOption), each checked as sbatch
takes it. The rows of one workload agree on them (slurm_checks.py)."""

from __future__ import annotations

import re

from radtrack.executor_contract import RowOption
from radtrack.sheet.cells import parse_constraint, parse_slurm_name, parse_time_limit

_MEM_RE = re.compile(r"^[1-9][0-9]*[KMGT]?$")


def parse_cpus(text: str) -> str:
    """A ``Cpus`` cell or ``--cpus-per-task``: the workload job's CPUs, a whole number >= 1."""
    from radtrack import inputs

    return str(inputs.whole(text, "CPUs", minimum=1))


def parse_mem(text: str) -> str:
    """``--mem`` as sbatch takes it: a whole number of MB, or with a unit K, M, G or T."""
    if not _MEM_RE.match(text.strip().upper()):
        raise ValueError(f"{text!r} is not a SLURM memory size: a whole number of MB, or with "
                         "a unit K, M, G or T (16G, 64000)")
    return text.strip().upper()


#: a workload job's sbatch options, as rows carry them (RunSpec.executor_options[key]);
#: those with a column are the same for every row of a workload (slurm_checks.py)
ROW_OPTIONS = (
    RowOption("partition", "Partition", "partition", parse_slurm_name),
    RowOption("account", "Account", "account", parse_slurm_name),
    RowOption("time_limit", "TimeLimit", "time_limit", parse_time_limit),
    RowOption("qos", "QoS", "qos", parse_slurm_name),
    RowOption("constraint", "Constraint", "constraint", parse_constraint),
    RowOption("cpus_per_task", "Cpus", "cpus_per_task", parse_cpus),
    RowOption("mem", None, "mem", parse_mem),
)
