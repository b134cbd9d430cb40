"""read_sheet: parse and validate a whole sheet into RunSpec rows.

A sheet is parsed whole and every problem is reported at once, each as
``<file>:<line>: column <Column>: <message>``, before anything starts. docs/sheets.md
describes the format.
"""

from __future__ import annotations

import csv
import shlex
from dataclasses import fields
from pathlib import Path
from typing import Any

from radtrack import gpus as gpus_mod
from radtrack.errors import RadtrackError, SheetError
from radtrack.listeners import registry
from radtrack.postrun.footprint import check_intensity, check_pue
from radtrack.sheet.cells import (
    parse_bool,
    parse_clocks,
    parse_collocation,
    parse_constraint,
    parse_devices,
    parse_env,
    parse_positive,
    parse_slurm_name,
    parse_time_limit,
)
from radtrack.sheet.checks import check_row, check_workloads
from radtrack.sheet.columns import COLUMNS, OPTIONAL, REQUIRED, SLURM_COLUMNS, column_key
from radtrack.sheet.host import check_against_host
from radtrack.sheet.records import Problems, Record, line_of, read_records, read_text
from radtrack.spec import RunSpec

_SPEC_FIELDS = {f.name for f in fields(RunSpec)}


def read_sheet(path: Path, defaults: dict[str, Any] | None = None, *,
               check_host: bool = True) -> list[RunSpec]:
    """Parse and validate a sheet into RunSpec rows, or raise SheetError naming every problem.

    ``defaults`` maps RunSpec field names to values from command-line flags; a non-empty
    sheet cell wins over them, and they win over RunSpec's own defaults. ``check_host=False``
    skips the checks against this host's GPUs (devices present, MIG profiles, MPS tool).
    """
    path = Path(path).expanduser().absolute()
    defaults = dict(defaults or {})
    bad = sorted(set(defaults) - _SPEC_FIELDS)
    if bad:
        raise ValueError(f"read_sheet defaults: unknown RunSpec field(s) {', '.join(bad)}")
    problems = Problems(path)
    try:
        text, _ = read_text(path)
    except FileNotFoundError:
        raise SheetError([f"{path}: no such sheet"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SheetError([f"{path}: cannot read the sheet: {exc}"]) from None
    try:
        records = read_records(text)
    except csv.Error as exc:
        raise SheetError([f"{path}: not valid CSV: {exc}"]) from None
    if not records:
        raise SheetError([f"{path}: empty sheet: no header row and no runs"])

    header, rows = records[0], records[1:]
    _refuse_other_delimiter(path, header)
    columns = _parse_header(header, problems)
    if not rows:
        problems.add("the sheet has a header but no runs", header.line)
    specs, parsed = [], []
    for rec in rows:
        spec, ok = _parse_row(rec, columns, len(header.cells), defaults, path, problems)
        parsed.append(spec)
        if ok:
            specs.append(spec)
    host = gpus_mod.inventory() if check_host and parsed else []
    check_workloads(specs, problems, host)
    if check_host and parsed:
        # Rows with other problems are checked too, so that one run shows every problem.
        check_against_host(parsed, problems, host)
    problems.items.sort(key=line_of)
    if problems.items:
        raise SheetError(problems.items)
    return specs


def _refuse_other_delimiter(path: Path, header: Record) -> None:
    """One line, not one 'unknown column' per row, for a sheet saved with ';' or tabs."""
    if len(header.cells) != 1:
        return
    for sep, name in ((";", "semicolons"), ("\t", "tabs")):
        names = [column_key(c) for c in header.cells[0].split(sep)]
        if len(names) > 1 and sum(n in COLUMNS for n in names) >= 2:
            raise SheetError([f"{path}:{header.line}: the sheet is not comma-separated (its "
                              f"header is separated by {name}); save it as CSV with commas"])


def _parse_header(header: Record, problems: Problems) -> dict[str, int]:
    columns: dict[str, int] = {}
    for i, raw in enumerate(header.cells):
        name = raw.strip()
        if not name:
            if any(c.strip() for c in header.cells[i + 1:]):
                problems.add(f"header cell {i + 1} is empty", header.line)
            continue
        canonical = COLUMNS.get(column_key(name))
        if canonical is None:
            problems.add(f"unknown column; known columns: {', '.join((*REQUIRED, *OPTIONAL))}",
                         header.line, name)
        elif canonical in columns:
            problems.add("column appears twice in the header", header.line, canonical)
        else:
            columns[canonical] = i
    for name in REQUIRED:
        if name not in columns:
            problems.add("missing required column", header.line, name)
    return columns


def _parse_row(rec: Record, columns: dict[str, int], width: int, defaults: dict[str, Any],
               sheet: Path, problems: Problems) -> tuple[RunSpec, bool]:
    extra = [c for c in rec.cells[width:] if c.strip()]
    if extra:
        problems.add(f"{len(rec.cells)} cells but the header has {width} columns "
                     "(quote cells that contain commas)", rec.line)

    def cell(name: str) -> str:
        i = columns.get(name)
        return rec.cells[i].strip() if i is not None and i < len(rec.cells) else ""

    before = len(problems.items)
    kw: dict[str, Any] = dict(defaults)
    kw["env"] = dict(defaults.get("env") or {})

    def field(column: str, target: str, parse: Any) -> None:
        text = cell(column)
        if not text:
            return
        try:
            kw[target] = parse(text)
        except ValueError as exc:
            problems.add(str(exc), rec.line, column)

    experiment = cell("Experiment")
    if not experiment and "Experiment" in columns:
        problems.add("empty: name the MLflow experiment (a name or a number)", rec.line,
                     "Experiment")
    kw["experiment"] = experiment

    workload = cell("Workload")
    if "Workload" in columns:
        if workload.isdigit():
            kw["workload"] = int(workload)
        else:
            problems.add(f"{workload!r} is not a whole number; rows with the same Experiment "
                         "and Workload run together", rec.line, "Workload")
    kw.setdefault("workload", 0)

    file_text = cell("File")
    if "File" in columns:
        if not file_text:
            problems.add("empty: give the Python script to run", rec.line, "File")
        else:
            script = Path(file_text).expanduser()
            if not script.is_absolute():
                script = sheet.parent / script
            script = script.resolve()
            if script.is_dir():
                problems.add(f"{file_text!r} is a directory ({script}); give the Python "
                             "script to run", rec.line, "File")
            elif not script.is_file():
                problems.add(f"script {file_text!r} not found (looked for {script})", rec.line,
                             "File")
            elif script.suffix != ".py":
                problems.add(f"{file_text!r} is not a Python script (.py); radtrack runs File "
                             "with Python", rec.line, "File")
            kw["file"] = script
    kw.setdefault("file", Path(file_text or "."))

    if "Params" in columns:
        try:
            kw["args"] = shlex.split(cell("Params"))
        except ValueError as exc:
            problems.add(f"cannot split {cell('Params')!r} into arguments: {exc}", rec.line,
                         "Params")

    field("Devices", "devices", parse_devices)
    field("Collocation", "collocation", parse_collocation)
    listeners = cell("Listeners")
    if listeners:
        bad_entry = ""
        try:
            names = registry.parse_names(listeners) or []
        except RadtrackError as exc:
            names, bad_entry = [], str(exc)
        unknown = [n for n in registry.unknown(names) if n != "none"]
        if bad_entry:
            problems.add(bad_entry, rec.line, "Listeners")
        elif "none" in names and len(names) > 1:
            problems.add(f"{listeners!r}: 'none' cannot be combined with other listeners",
                         rec.line, "Listeners")
        elif unknown:
            problems.add(f"unknown listener(s) {', '.join(unknown)}; installed: "
                         f"{', '.join(sorted(registry.installed()))}", rec.line, "Listeners")
        else:
            kw["listeners"] = names
    field("Interval", "interval", lambda t: float(parse_positive(t, float, "seconds")))
    field("MaxEpoch", "max_epoch", lambda t: int(parse_positive(t, int, "epochs")))
    field("MaxTime", "max_time", lambda t: float(parse_positive(t, float, "minutes")))
    field("PowerLimit", "power_limit", lambda t: float(parse_positive(t, float, "watts")))
    field("Clocks", "clocks", parse_clocks)
    field("RunName", "run_name", str)
    field("Manual", "manual", parse_bool)
    field("CarbonIntensity", "carbon_intensity",
          lambda t: check_intensity(_number(t, "g CO2e/kWh"), "the cell"))
    if cell("CarbonIntensity") and "carbon_intensity" in kw:
        kw["carbon_source"] = "sheet"
    field("PUE", "pue", lambda t: check_pue(_number(t, "a ratio like 1.2"), "the cell"))
    env_text = cell("Env")
    if env_text:
        try:
            kw["env"].update(parse_env(env_text))
        except ValueError as exc:
            problems.add(str(exc), rec.line, "Env")

    kw["slurm"] = dict(defaults.get("slurm") or {})
    slurm_parsers = {"Partition": parse_slurm_name, "Account": parse_slurm_name,
                     "QoS": parse_slurm_name, "TimeLimit": parse_time_limit,
                     "Constraint": parse_constraint}
    for column, key in SLURM_COLUMNS.items():
        text = cell(column)
        if text:
            try:
                kw["slurm"][key] = slurm_parsers[column](text)
            except ValueError as exc:
                problems.add(str(exc), rec.line, column)
    kw["job"] = cell("Job")
    kw["status"] = cell("Status")
    kw["run_id"] = cell("Run")
    kw["row"] = rec.line
    kw["sheet"] = sheet
    spec = RunSpec(**kw)
    check_row(spec, problems)
    return spec, len(problems.items) == before


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number ({what})") from None
