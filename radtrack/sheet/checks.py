"""Checks of rows and of the rows of one workload that need no host: combinations of
cells that cannot work, and co-located rows that disagree about a shared GPU."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from radtrack import gpus as gpus_mod
from radtrack.errors import SheetError
from radtrack.sheet.columns import STATUSES, status_word
from radtrack.sheet.limits import experiment_name_problem, param_problems, run_name_problem
from radtrack.sheet.records import Problems
from radtrack.spec import RunSpec


def check_row(spec: RunSpec, problems: Problems) -> None:
    kind = spec.collocation_kind
    if kind == "mig" and len(spec.devices) != 1:
        problems.add(f"MIG profile {spec.collocation} needs exactly one GPU in Devices, got "
                     f"{'+'.join(spec.devices) or 'none'}", spec.row, "Devices")
    if kind == "mps" and not spec.devices:
        problems.add("MPS needs the GPU(s) its daemon serves in Devices", spec.row, "Devices")
    if spec.clocks and not spec.devices:
        problems.add("Clocks needs the GPU(s) to lock in Devices", spec.row, "Clocks")
    if spec.power_limit is not None and not spec.devices:
        problems.add("PowerLimit needs the GPU(s) to limit in Devices", spec.row, "PowerLimit")
    if status_word(spec.status) not in ("", *STATUSES):
        problems.add(f"{spec.status!r}: the status must be one of {', '.join(STATUSES)} "
                     "(or empty to run the row)", spec.row, "Status")
    if spec.devices and "CUDA_VISIBLE_DEVICES" in spec.env:
        problems.add(f"CUDA_VISIBLE_DEVICES={spec.env['CUDA_VISIBLE_DEVICES']} conflicts with "
                     f"Devices {'+'.join(spec.devices)}, from which radtrack sets it; remove it "
                     "from Env, or leave Devices empty to choose the GPUs through Env yourself",
                     spec.row, "Env")
    check_mlflow_limits(spec, problems)


def check_mlflow_limits(spec: RunSpec, problems: Problems) -> None:
    """What MLflow would refuse after the runs exist: names too long, param names."""
    problem = experiment_name_problem(spec.experiment)
    if problem:
        problems.add(problem, spec.row, "Experiment")
    elif spec.run_name:
        problem = run_name_problem(spec.run_name, default=False)
        if problem:
            problems.add(problem, spec.row, "RunName")
    else:
        problem = run_name_problem(spec.default_run_name(), default=True)
        if problem:
            problems.add(problem, spec.row, "Experiment")
    for problem in param_problems(spec.args):
        problems.add(problem, spec.row, "Params")


def by_workload(specs: list[RunSpec]) -> dict[tuple[str, int], list[RunSpec]]:
    groups: dict[tuple[str, int], list[RunSpec]] = {}
    for s in specs:
        groups.setdefault((s.experiment, s.workload), []).append(s)
    return groups


def check_workloads(specs: list[RunSpec], problems: Problems,
                     gpus: list[gpus_mod.Gpu] | None = None) -> None:
    """Checks across the rows of one workload: rows that share a GPU must agree."""

    def gpu_key(device: str) -> str:
        # The same GPU may be written as an index in one row and a UUID in another.
        if gpus:
            idx = gpus_mod.resolve_index(device, gpus)
            if idx is not None:
                return str(idx)
        return device

    for (experiment, workload), rows in by_workload(specs).items():
        name = f"workload {experiment}-{workload}"
        mig_rows: dict[str, RunSpec] = {}
        other_rows: dict[str, RunSpec] = {}
        mps_sets: dict[str, tuple[str, ...]] = {}
        clocks: dict[str, tuple[RunSpec, str]] = {}
        power: dict[str, tuple[RunSpec, float]] = {}
        for s in rows:
            keys = [gpu_key(d) for d in s.devices]
            target = mig_rows if s.collocation_kind == "mig" else other_rows
            for k in keys:
                target.setdefault(k, s)
            if s.collocation_kind == "mps":
                group = tuple(sorted(keys))
                for k in keys:
                    prev = mps_sets.setdefault(k, group)
                    if prev != group:
                        problems.add(f"{name}: MPS rows share GPU {k} but name different device "
                                     "sets; MPS rows of a workload must use the same devices or "
                                     "disjoint ones", s.row, "Devices")
                        break
            for k in keys:
                if s.clocks:
                    prev_c = clocks.setdefault(k, (s, s.clocks))
                    if prev_c[1] != s.clocks:
                        problems.add(f"{name}: GPU {k} gets Clocks {prev_c[1]} in line "
                                     f"{prev_c[0].row} but {s.clocks} here", s.row, "Clocks")
                if s.power_limit is not None:
                    prev_p = power.setdefault(k, (s, s.power_limit))
                    if prev_p[1] != s.power_limit:
                        problems.add(f"{name}: GPU {k} gets PowerLimit {prev_p[1]:g} W in line "
                                     f"{prev_p[0].row} but {s.power_limit:g} W here", s.row,
                                     "PowerLimit")
        for k, mig in mig_rows.items():
            if k in other_rows:
                other = other_rows[k]
                later = max(mig, other, key=lambda r: r.row or 0)
                problems.add(f"{name}: GPU {k} is split into MIG instances (line {mig.row}) and "
                             f"also used whole (line {other.row}, collocation "
                             f"{other.collocation}); a GPU in MIG mode runs work only on MIG "
                             "instances", later.row, "Collocation")


_CLI_OPTION = {"Experiment": "-e/--experiment", "RunName": "--run-name",
               "Params": "the script's arguments", "Devices": "-d/--devices", "Collocation": "-c/--collocation",
               "Listeners": "-l/--listeners", "File": "the script", "Clocks": "Clocks",
               "PowerLimit": "PowerLimit"}


def validate_command_line(spec: RunSpec, *, check_host: bool = True, cpu_fallback: bool = False,
                          warn: Callable[[str], None] | None = None) -> None:
    """The row checks of a sheet, for a single-run launch (a one-row sheet): raise a
    SheetError whose lines name the command-line option at fault (``warn`` gets the lines
    about this host that do not stop the launch, worded the same way)."""
    problems = Problems(Path("command line"))
    check_row(spec, problems)
    from radtrack.sheet.host import check_against_host, check_gpu_requests

    host = gpus_mod.inventory() if check_host else []
    check_workloads([spec], problems, host)
    if check_host:
        check_against_host([spec], problems, host)
        check_gpu_requests([spec], problems, host, cpu_fallback=cpu_fallback,
                           warn=(lambda m: warn(_cli_words(m))) if warn else None)
    if problems.items:
        raise SheetError([_cli_words(item) for item in problems.items])


def _cli_words(item: str) -> str:
    for column, option in _CLI_OPTION.items():
        item = item.replace(f"column {column}:", f"{option}:")
    return item
