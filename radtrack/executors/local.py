"""The local executor: run the workloads on this host, one after another (the launcher in
radtrack/run/experiment.py), writing each workload's statuses back to the sheet."""

from __future__ import annotations

from pathlib import Path

from radtrack.spec import RunSpec


def run(workloads: list[list[RunSpec]], uri: str, grace: float, sheet: Path | None) -> int:
    from radtrack.errors import RadtrackError
    from radtrack.run.experiment import run_workloads

    spread = [s for specs in workloads for s in specs if s.nodes > 1]
    if spread:
        where = f"{spread[0].sheet}:{spread[0].row}: column Nodes" if spread[0].row else "--nodes"
        raise RadtrackError(f"{where}: a row over {spread[0].nodes} nodes runs as one SLURM job "
                            "(--executor slurm), or by hand with `radtrack --nodes N --node-rank "
                            "K --master HOST` on each node (docs/sheets.md#multi-node-rows)")

    return run_workloads(workloads, uri, grace=grace, sheet=sheet)
