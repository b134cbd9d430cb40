"""read_sheet: parse and validate a whole sheet into RunSpec rows.

A sheet is parsed whole and every problem is reported at once, each as
``<file>:<line>: column <Column>: <message>``, before anything starts. docs/sheets.md
describes the format.
"""

from __future__ import annotations

import csv
import shlex
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from radtrack import gpus as gpus_mod
from radtrack import inputs
from radtrack.compute.carbon import check_intensity, check_pue
from radtrack.device_entries import parse_devices
from radtrack.errors import RadtrackError, SheetError
from radtrack.listeners import registry
from radtrack.sheet.cells import (
    check_listener_intervals,
    parse_bool,
    parse_clocks,
    parse_collocation,
    parse_env,
    parse_positive,
)
from radtrack.sheet.checks import check_row, check_workloads
from radtrack.sheet.columns import COLUMNS, OPTIONAL, REQUIRED, column_key
from radtrack.sheet.host import check_against_host, check_gpu_requests
from radtrack.sheet.records import (
    Problems,
    Record,
    line_of,
    open_quote,
    physical_lines,
    read_records,
    read_text,
)
from radtrack.sheet.rowmatch import WRITTEN, row_key, with_neighbours
from radtrack.spec import RunSpec

_SPEC_FIELDS = {f.name for f in fields(RunSpec)}


def read_sheet(path: Path, defaults: dict[str, Any] | None = None, *,
               check_host: bool = True, cpu_fallback: bool = False,
               warn: Callable[[str], None] | None = None) -> list[RunSpec]:
    """Parse and validate a sheet into RunSpec rows, or raise SheetError naming every problem.

    ``defaults`` maps RunSpec field names to values from command-line flags; a non-empty
    sheet cell wins over them, and they win over RunSpec's own defaults. ``check_host=False``
    skips the checks against this host's GPUs (a GPU at all, devices present, MIG profiles,
    MPS tool). ``cpu_fallback`` (``--allow-cpu-fallback``) lets Devices rows run on a host
    without a GPU; ``warn`` gets each line about this host that does not stop the launch.
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
    if _unbalanced_quote(header, [c.strip() or f"cell {i + 1}" for i, c in
                                  enumerate(header.cells)], problems):
        raise SheetError(problems.items)
    columns = _parse_header(header, problems)
    if not rows:
        problems.add("the sheet has a header but no runs", header.line)
    names = {i: name for name, i in columns.items()}
    specs, parsed = [], []
    for rec in rows:
        labels = [names.get(i, f"cell {i + 1}") for i in range(len(rec.cells))]
        if _unbalanced_quote(rec, labels, problems, len(header.cells)):
            continue  # the record swallowed the lines after it: nothing in it can be trusted
        bad = _odd_cells(rec, labels, problems)
        spec, ok = _parse_row(rec, columns, len(header.cells), defaults, path, problems, bad)
        parsed.append(spec)
        if ok:
            specs.append(spec)
    # each row's identity with its neighbours' as read: a copy pasted beside a row is told
    # apart from the row that ran (rowmatch.py)
    for spec, key in zip(parsed, with_neighbours([s.row_key for s in parsed]), strict=True):
        spec.row_key = key
    host = gpus_mod.inventory() if check_host and parsed else []
    check_workloads(specs, problems, host)
    if check_host and parsed:
        # Rows with other problems are checked too, so that one run shows every problem.
        check_against_host(parsed, problems, host)
        check_gpu_requests(parsed, problems, host, cpu_fallback=cpu_fallback, warn=warn)
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


def _unbalanced_quote(rec: Record, labels: list[str], problems: Problems,
                      width: int | None = None) -> bool:
    """A quoted cell over several lines (RFC 4180) that swallowed rows: a '"' opened a quoted
    cell that did not close on its line, and the csv reader ran on into the lines after it,
    rows included (one of them holds a whole row's commas: ``width`` cells, at most the
    required columns), or to the end of the file. A quoted cell over several lines that holds
    no row is a cell like any other (``_odd_cells`` says which columns take one). The header
    (``width`` None) never spans lines."""
    multi = [(c, lb) for c, lb in zip(rec.cells, labels, strict=False) if "\n" in c or "\r" in c]
    if not multi:
        return False
    # a quote that never closes: the reader ran to the end of the file, taking the last
    # line's break into the cell (a cell that closes after a line break has an even count)
    at_end = rec.text.count('"') % 2 == 1 and any(c.endswith(("\n", "\r")) for c, _ in multi)
    if width is not None and not at_end and not any(
            _holds_a_row(cell, min(width, len(REQUIRED))) for cell, _ in multi):
        return False
    found = open_quote(rec.first)
    if found is None:  # a CR alone inside a cell
        where, label = "", multi[0][1]
    else:
        where = f" at character {found[0] + 1}"
        label = labels[found[1]] if found[1] < len(labels) else f"cell {found[1] + 1}"
    span = sum(max(len(physical_lines(c)) - 1, 0) for c in rec.cells)
    if at_end:
        runs_on = "is never closed before the end of the file"
    else:
        runs_on = (f"does not close on this line, so the {span} line(s) after it, up to the "
                   f"next '\"' (line {rec.line + span}), would be read as part of the cell")
    problems.add(f"unbalanced quote: the '\"'{where} opens a quoted cell that {runs_on}; close "
                 "it on the same line, write a quote inside a quoted cell as '\"\"', or use "
                 "single quotes inside Params ('a b')", rec.line, label)
    return True


def _holds_a_row(cell: str, cells: int) -> bool:
    """Whether a line after the first of a multi-line ``cell`` reads as a row of ``cells``
    cells or more (a row the cell swallowed), not as text that goes on."""
    for line in physical_lines(cell)[1:]:
        try:
            row = next(csv.reader([line], skipinitialspace=True), [])
        except csv.Error:
            continue
        if len(row) >= cells:
            return True
    return False


# columns whose text may go over several lines (a quoted cell): a line break there is a space
_MULTI_LINE = ("Params", "Env")


def _odd_cells(rec: Record, labels: list[str], problems: Problems) -> set[str]:
    """The text rule for every cell (radtrack/inputs.py): no NUL, tab or other control
    character. Returns the columns refused, whose cells are not parsed further. A quoted
    Params or Env cell over several lines reads as one line (its line breaks as spaces)."""
    bad = set()
    for i, (cell, label) in enumerate(zip(rec.cells, labels, strict=False)):
        if label in _MULTI_LINE and ("\n" in cell or "\r" in cell):
            cell = rec.cells[i] = " ".join(line.strip() for line in physical_lines(cell))
        try:
            inputs.check_text(cell.strip())
        except ValueError as exc:
            hint = ("; a quoted cell may go over several lines only in "
                    f"{' and '.join(_MULTI_LINE)}" if "\n" in cell or "\r" in cell else "")
            problems.add(f"the cell {exc}{hint}", rec.line, label)
            bad.add(label)
    return bad


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
               sheet: Path, problems: Problems, bad: set[str]) -> tuple[RunSpec, bool]:
    extra = [c for c in rec.cells[width:] if c.strip()]
    if extra:
        problems.add(f"{len(rec.cells)} cells but the header has {width} columns "
                     "(quote cells that contain commas)", rec.line)

    def cell(name: str) -> str:
        i = columns.get(name)
        if name in bad or i is None or i >= len(rec.cells):
            return ""  # a cell the text rule refused is not parsed again
        return rec.cells[i].strip()

    before = len(problems.items) - len(bad)
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
    if not experiment and "Experiment" in columns and "Experiment" not in bad:
        problems.add("empty: name the MLflow experiment (a name or a number)", rec.line,
                     "Experiment")
    kw["experiment"] = experiment

    workload = cell("Workload")
    if "Workload" in columns and "Workload" not in bad:
        try:
            kw["workload"] = inputs.whole(workload, minimum=0)
        except ValueError as exc:
            problems.add(f"{exc}; rows with the same Experiment and Workload run together",
                         rec.line, "Workload")
    kw.setdefault("workload", 0)

    file_text = cell("File")
    if "File" in columns and "File" not in bad:
        if not file_text:
            problems.add("empty: give the Python script to run", rec.line, "File")
        else:
            kw["file"], problem = _script(file_text, sheet)
            if problem:
                problems.add(problem, rec.line, "File")
    kw.setdefault("file", Path(file_text or "."))

    if "Params" in columns:
        try:
            kw["args"] = shlex.split(cell("Params"))
        except ValueError as exc:
            problems.add(_params_problem(cell("Params"), exc), rec.line, "Params")

    field("Devices", "devices", parse_devices)
    field("Collocation", "collocation", parse_collocation)
    listeners = cell("Listeners")
    if listeners:
        bad_entry = ""
        try:
            check_listener_intervals(listeners)
            names = registry.parse_names(listeners) or []
        except (RadtrackError, ValueError) as exc:
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
    field("Nodes", "nodes", lambda t: int(parse_positive(t, int, "nodes")))
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

    # each executor's own columns (a SLURM job's Partition, ...), as it declares them
    kw["executor_options"] = dict(defaults.get("executor_options") or {})
    from radtrack.executor_registry import row_options

    for option in row_options():
        text = cell(option.column) if option.column else ""
        if text:
            try:
                kw["executor_options"][option.key] = option.parse(text)
            except ValueError as exc:
                problems.add(str(exc), rec.line, option.column)
    kw["job"] = cell("Job")
    kw["status"] = cell("Status")
    kw["run_id"] = cell("Run")
    kw["row"] = rec.line
    # what the write-back finds the row again by, wherever edits move it (rowmatch.py)
    kw["row_key"] = row_key([columns[c] for c in WRITTEN if c in columns], rec.cells)
    kw["sheet"] = sheet
    spec = RunSpec(**kw)
    check_row(spec, problems)
    return spec, len(problems.items) == before


def _script(text: str, sheet: Path) -> tuple[Path, str | None]:
    """The File cell's script, relative to the sheet's folder, and what is wrong with it."""
    script = Path(text).expanduser()
    if not script.is_absolute():
        script = sheet.parent / script
    try:
        script = script.resolve()
        problem = inputs.script_problem(text, script)
        if problem:
            return script, problem
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError on Python 3.11
        return script, (f"{text!r} cannot be resolved to a file ({exc}); give the path of a "
                        "Python script (a symbolic link loop never reaches one)")
    if script.suffix != ".py":
        return script, (f"{text!r} is not a Python script (.py); radtrack runs File with "
                        "Python")
    return script, None


def _number(text: str, what: str) -> float:
    return inputs.number(text, what)


def _params_problem(text: str, exc: ValueError) -> str:
    """shlex's complaint, with where the unclosed quote opened when that is it."""
    quote = _unclosed_shell_quote(text)
    if quote is None:
        return f"cannot split {text!r} into arguments: {exc}"
    return (f"unbalanced quote: the {text[quote]!r} at character {quote + 1} of {text!r} is "
            "never closed; close it, or escape a literal quote with a backslash")


def _unclosed_shell_quote(text: str) -> int | None:
    """0-based position of the quote shlex (POSIX mode) leaves open in ``text``, if any."""
    i, n, opened, kind = 0, len(text), -1, ""
    while i < n:
        ch = text[i]
        if kind == "'":
            if ch == "'":
                kind = ""
        elif kind == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                kind = ""
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            kind, opened = ch, i
        i += 1
    return opened if kind else None
