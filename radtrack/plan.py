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


def unavailable_listeners(workloads: list[list[RunSpec]]) -> str:
    """The listeners the plan's rows would run that this host cannot offer, each with why
    (the launch says the same as each row starts: radtrack/run/start.py check_listeners);
    '' when it can offer them all. A row naming none runs the installed sampling listeners
    (``registry.sampling_names``) this host can run."""
    from radtrack.listeners.protocol import ListenerChoice
    from radtrack.listeners.registry import availability, sampling_names

    named: dict[str, bool] = {}  # name -> some row named it (else: a default)
    for rows in workloads:
        for s in rows:
            for entry in sampling_names() if s.listeners is None else s.listeners:
                name = ListenerChoice.parse(entry).name
                named[name] = named.get(name, False) or s.listeners is not None
    lines = []
    for name, by_name in named.items():
        ok = availability(name)
        if not ok:
            what = ("named by a row: the run records it unavailable" if by_name
                    else "a default listener: left out")
            lines.append(f"  {name}: {ok.reason} ({what})")
    return ("listeners this host cannot offer:\n" + "\n".join(lines) + "\n") if lines else ""


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
