"""Checks of a sheet that runs under the SLURM executor, before anything is submitted.

Under SLURM a workload is one batch job: its Devices are indices within the job's GPU
allocation (0..N-1, N = ``--gres=gpu:N``), its rows agree on the job's options (``Cpus``
among them: the job's CPUs), and no row asks radtrack to create a MIG instance (MIG layouts
belong to the cluster's admins). A row over several nodes (``Nodes``) is a workload and a
job of its own, plain (radtrack/executors/slurm_nodes.py).
"""

from __future__ import annotations

from pathlib import Path

from radtrack.errors import SheetError
from radtrack.executors.slurm_options import ROW_OPTIONS
from radtrack.sheet.records import Problems, line_of
from radtrack.spec import RunSpec

DEFAULT_CPUS_PER_ROW = 2  # a job's default CPUs: 2 a row + 1 for the launcher and listeners


def cpus_per_task(rows: list[RunSpec]) -> tuple[int, bool]:
    """The workload job's CPUs and whether that is the default: the rows' ``Cpus`` (or
    ``--cpus-per-task``), else 2 per row plus 1 for the launcher and its listeners."""
    given = next((s.executor_options["cpus_per_task"] for s in rows if s.executor_options.get("cpus_per_task")), "")
    if given:
        return int(given), False
    return DEFAULT_CPUS_PER_ROW * len(rows) + 1, True


def gpu_count(rows: list[RunSpec]) -> int:
    """N in ``--gres=gpu:N``: the distinct devices the workload's rows use."""
    return len({d for s in rows for d in s.devices})


def check_for_slurm(specs: list[RunSpec], path: Path) -> None:
    """Raise SheetError naming every row and column that cannot run as a SLURM job."""
    problems = Problems(Path(path))
    groups: dict[tuple[str, int], list[RunSpec]] = {}
    for s in specs:
        groups.setdefault((s.experiment, s.workload), []).append(s)
        if s.collocation_kind == "mig":
            problems.add(f"MIG profile {s.collocation}: under SLURM radtrack does not create "
                         "MIG instances (the cluster's admins do); request the MIG device "
                         "SLURM offers and name it by its index in Devices with Collocation "
                         "'-' or MPS", s.row, "Collocation")
        if s.nodes > 1 and s.collocation_kind != "plain":
            problems.add(f"{s.collocation}: a row over {s.nodes} nodes (Nodes) runs plain, one "
                         "script per node on its Devices: use Collocation '-'", s.row, "Collocation")
        not_index = [d for d in s.devices if not d.isdigit()]
        if not_index:
            problems.add(f"{', '.join(not_index)}: under SLURM, Devices are indices within "
                         "the job's GPU allocation (0, 1, 0+1), not GPU UUIDs", s.row, "Devices")
    for (experiment, workload), rows in groups.items():
        name = f"workload {experiment}-{workload}"
        spread = next((s for s in rows if s.nodes > 1), None)
        if spread is not None and len(rows) > 1:
            problems.add(f"{name}: the row over {spread.nodes} nodes is one SLURM job of its own; "
                         "give it a workload without other rows", spread.row, "Nodes")
        used = sorted({int(d) for s in rows for d in s.devices if d.isdigit()})
        if used and used != list(range(len(used))):
            problems.add(f"{name} uses device(s) {'+'.join(map(str, used))}: the job gets "
                         f"{len(used)} GPU(s) (--gres=gpu:{len(used)}), numbered 0 to "
                         f"{len(used) - 1} within its allocation", rows[0].row, "Devices")
        for column, key in ((o.column, o.key) for o in ROW_OPTIONS if o.column):
            first = next((s for s in rows if s.executor_options.get(key)), None)
            for s in rows:
                if first and s.executor_options.get(key) != first.executor_options[key]:
                    problems.add(f"{name} is one SLURM job, but this row's {column} is "
                                 f"{s.executor_options.get(key) or '(none)'!r} and line {first.row}'s is "
                                 f"{first.executor_options[key]!r}", s.row, column)
    if problems.items:
        raise SheetError(sorted(problems.items, key=line_of))
