"""Group sheet rows into workloads and describe the plan for ``--dry-run``."""

from __future__ import annotations

import shlex
from pathlib import Path

from radtrack.placement import WorkloadPlacement
from radtrack.spec import RunSpec


def letter(n: int) -> str:
    """0 -> 'A', 25 -> 'Z', 26 -> 'AA' (spreadsheet column style)."""
    out = ""
    n += 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(ord("A") + rem) + out
    return out


def group_workloads(specs: list[RunSpec]) -> list[list[RunSpec]]:
    """Rows sharing (experiment, workload), in order of first appearance; sets ``letter``."""
    groups: dict[tuple[str, int], list[RunSpec]] = {}
    for s in specs:
        groups.setdefault((s.experiment, s.workload), []).append(s)
    for rows in groups.values():
        for i, s in enumerate(rows):
            s.letter = letter(i)
    return list(groups.values())


def _listeners(spec: RunSpec) -> str:
    if spec.listeners is None:
        return "default"
    return "+".join(spec.listeners) or "none"


def format_plan(workloads: list[list[RunSpec]], run_dir: Path | None = None) -> str:
    """Workloads, rows, placement steps and each process's environment; changes nothing.

    ``run_dir`` is where the workload's scratch files (MPS pipes and logs) would go; it
    only appears in the text.
    """
    lines = []
    for rows in workloads:
        first = rows[0]
        lines.append(f"workload {first.experiment}-{first.workload} (experiment "
                     f"{first.experiment!r}, {len(rows)} row{'s' if len(rows) != 1 else ''})")
        for s in rows:
            where = f"line {s.row}" if s.row is not None else "command line"
            lines.append(f"  {s.letter}  {where}: {s.run_name or s.default_run_name()}")
            lines.append(f"     command: {shlex.join(['python', str(s.file), *s.args])}")
            lines.append(f"     devices: {'+'.join(s.devices) or '-'}  collocation: "
                         f"{s.collocation}  listeners: {_listeners(s)}  interval: "
                         f"{s.interval:g} s")
            limits = [f"max_epoch {s.max_epoch}" if s.max_epoch else "",
                      f"max_time {s.max_time:g} min" if s.max_time else "",
                      f"clocks {s.clocks.replace(',', '-')} MHz" if s.clocks else "",
                      f"power limit {s.power_limit:g} W" if s.power_limit is not None else ""]
            if any(limits):
                lines.append(f"     limits: {', '.join(x for x in limits if x)}")
        placement = WorkloadPlacement(rows, run_dir or Path("<run dir>"), log=lambda _: None)
        steps = placement.describe()
        lines.append("  placement:")
        lines.extend(f"    - {step}" for step in steps or ["none (no GPU setup needed)"])
        lines.append("  environment:")
        for s in rows:
            env = {**s.env, **placement.planned_env(s)}
            text = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) or "(inherited)"
            lines.append(f"    {s.letter}: {text}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
