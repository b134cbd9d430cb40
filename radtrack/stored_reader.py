"""The reader of stored runs that the end of a co-located workload needs, handed down from
the top of the house.

STP, ANTT, energy vs serial and the solo-model split compare a co-located workload's rows
with the solo runs of the same scripts, which only the store holds; reading them back is a
reader's work (radtrack/analysis/workload_runs.py). The launch (radtrack/run/, the executors)
imports no reader: the entries at the top, the command (radtrack/cli.py), ``radtrack sync``
(radtrack/sync_command.py) and a SLURM job's batch script (radtrack/executors/slurm.py
``batch_script``), hand it this function, which imports the reader only when a workload of
several rows calls it (MLflow and pandas: seconds of CPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radtrack.compute.colocation import WorkloadRuns


def read_stored(experiment: str, workload: int | str, tracking_uri: str) -> WorkloadRuns | None:
    """The workload's rows and its scripts' other runs as stored (read_workload_runs)."""
    from radtrack.analysis.workload_runs import read_workload_runs

    return read_workload_runs(experiment, workload, tracking_uri)


def slurm_job(payload: str) -> int:
    """A SLURM batch job's launcher (radtrack/executors/slurm_job.py ``main``), with the
    reader: the entry the batch script calls."""
    from radtrack.executors.slurm_job import main

    return main(payload, read_stored)
