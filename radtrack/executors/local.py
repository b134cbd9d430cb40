"""The local executor: run the workloads on this host, one after another (the launcher in
radtrack/run/experiment.py), writing each workload's statuses back to the sheet."""

from __future__ import annotations

from pathlib import Path

from radtrack.spec import RunSpec


def run(workloads: list[list[RunSpec]], uri: str, grace: float, sheet: Path | None) -> int:
    from radtrack.run.experiment import run_workloads

    return run_workloads(workloads, uri, grace=grace, sheet=sheet)
