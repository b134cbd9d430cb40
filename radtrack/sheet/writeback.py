"""Writing Status and Run cells back into a sheet, atomically, every other byte kept."""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.atomic import write_atomic
from radtrack.errors import SheetError
from radtrack.sheet.columns import COLUMNS, column_key, status_cell
from radtrack.sheet.records import physical_lines, read_records, read_text
from radtrack.sheet.rowmatch import locate

if TYPE_CHECKING:
    from radtrack.spec import RunSpec


def _cell_spans(text: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """Character spans of the cells of the record starting at ``start``, and where it ends.

    Mirrors csv.reader with skipinitialspace: a quote opens a quoted cell only as the
    cell's first non-blank character, and a line break inside quotes continues the record.
    """
    spans = []
    n = len(text)
    i = cell_start = start
    at_cell_start = True
    quoted = False
    while i < n:
        ch = text[i]
        if quoted:
            if ch == '"':
                if i + 1 < n and text[i + 1] == '"':
                    i += 2
                    continue
                quoted = False
        elif ch == ",":
            spans.append((cell_start, i))
            cell_start = i + 1
            at_cell_start = True
        elif ch in "\r\n":
            break
        elif at_cell_start and ch == '"':
            quoted = True
            at_cell_start = False
        elif not ch.isspace():
            at_cell_start = False
        i += 1
    spans.append((cell_start, i))
    return spans, i


def _format_cell(old: str, value: str) -> str:
    """``value`` laid out like the cell it replaces: same leading blanks, same width if it fits."""
    if any(c in value for c in ',"\r\n') or value != value.strip():
        value = '"' + value.replace('"', '""') + '"'
    if old.strip():
        lead = old[: len(old) - len(old.lstrip())]
        trailing_blank = old != old.rstrip()
    else:
        lead = " " if old[:1].isspace() else ""
        trailing_blank = len(old) > 1
    new = lead + value
    if len(new) < len(old):
        return new.ljust(len(old))
    return new + " " if trailing_blank else new


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in physical_lines(text):
        offsets.append(offsets[-1] + len(line))
    return offsets


def write_statuses(path: Path, updates: dict[int, tuple[str, str]],
                   jobs: dict[int, str] | None = None,
                   identities: Mapping[int, tuple[str, str]] | None = None) -> list[int]:
    """Write Status and Run cells of several rows at once, atomically; the rows not found.

    ``updates`` maps a row (1-based line where the record starts) to (Status cell text,
    MLflow run id). Only those cells change; every other byte of the sheet stays as it
    was. A sheet without a Status or Run column gets it appended to its header.
    ``jobs`` maps rows to their Job cell (SLURM job id and state), written only when the
    sheet has a Job column. ``identities``: row -> (rowmatch.row_key, Run cell) as the
    sheet was read: each row is found again by them in the sheet as it is now, wherever
    edits moved it (rowmatch.py); the rows found nowhere are returned, not written.
    """
    path = Path(path)
    text, bom = read_text(path)
    try:
        records = read_records(text)
    except csv.Error as exc:
        raise SheetError([f"{path}: not valid CSV: {exc}"]) from None
    if not records:
        raise SheetError([f"{path}: empty sheet: no header row to write statuses under"])
    header = records[0]
    data_lines = {r.line for r in records[1:]}
    offsets = _line_offsets(text)
    header_spans, header_end = _cell_spans(text, offsets[header.line - 1])
    names = [COLUMNS.get(column_key(c.strip())) for c in header.cells]
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    index: dict[str, int] = {}
    for column in ("Status", "Run"):
        if column in names:
            index[column] = names.index(column)
        else:
            index[column] = len(header_spans) + len(appended)
            appended.append(column)
    if "Job" in names:
        index["Job"] = names.index("Job")
    if appended:
        edits.append((header_end, header_end, "".join(f",{c}" for c in appended)))

    jobs = jobs or {}
    lost: list[int] = []
    if identities is not None:  # a row without one (a spec from before row_key): by its line
        where = {r: r for r in {*updates, *jobs} if r not in identities}
        where.update(locate(records, {r: identities[r] for r in {*updates, *jobs} if r in identities},
                            {r: run for r, (_, run) in updates.items()}))
        lost = sorted(r for r in {*updates, *jobs} if r not in where)
        updates = {where[r]: v for r, v in updates.items() if r in where}
        jobs = {where[r]: v for r, v in jobs.items() if r in where}
        if not updates and not jobs:
            return lost
    for row in sorted({*updates, *jobs}):
        if row not in data_lines:
            raise SheetError([f"{path}:{row}: no run starts on this line; cannot write its "
                              "status"])
        spans, end = _cell_spans(text, offsets[row - 1])
        values: dict[int, str] = {}
        if row in updates:
            values = {index["Status"]: updates[row][0], index["Run"]: updates[row][1]}
        if row in jobs and "Job" in index:
            values[index["Job"]] = jobs[row]
        if not values:
            continue
        for i, value in values.items():
            if i < len(spans):
                a, b = spans[i]
                edits.append((a, b, _format_cell(text[a:b], value)))
        if max(values) >= len(spans):
            # Missing trailing cells read as empty; add just enough to reach Status/Run.
            tail = "".join("," + _format_cell("", values.get(i, ""))
                           for i in range(len(spans), max(values) + 1))
            edits.append((end, end, tail))

    out = text
    for a, b, new in sorted(edits, reverse=True):
        out = out[:a] + new + out[b:]
    write_atomic(path, (b"\xef\xbb\xbf" if bom else b"") + out.encode("utf-8"))
    return lost


def write_status(path: Path, row: int, status: str, run_id: str, *,
                 run_name: str | None = None, identity: tuple[str, str] | None = None) -> bool:
    """Write one row's Status (``<STATUS> <run name>`` when run_name is given) and Run cells;
    with ``identity`` (write_statuses), the row is found again by it: False when it is not."""
    return not write_statuses(
        path, {row: (status_cell(status, run_name) if run_name else status, run_id)},
        identities=None if identity is None else {row: identity})


def write_ran_rows(path: Path, specs: Sequence[RunSpec], ends: Sequence[tuple[str, str, str]],
                   log: Callable[[str], None]) -> None:
    """A workload's rows' (Status, run id, run name) ``ends`` into the rows of ``path`` that
    ran, found again wherever edits made while they ran moved them (rowmatch.py). A row found
    nowhere is said in one line naming the sheet, the row and its run (the run is in the
    store); a sheet that cannot be written any more (deleted, unreadable) too, naming the
    runs; the launch goes on."""
    updates, identities, names = {}, {}, {}
    for spec, (status, run_id, run_name) in zip(specs, ends, strict=True):
        if spec.row is not None:
            updates[spec.row] = (status_cell(status, run_name) if run_name else status, run_id)
            if spec.row_key:
                identities[spec.row] = (spec.row_key, spec.run_id)
            names[spec.row] = run_name
    try:
        lost = write_statuses(path, updates, identities=identities)
    except (OSError, UnicodeDecodeError, SheetError) as exc:  # deleted, unreadable, no CSV
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        runs = ", ".join(f"{names[r]} {updates[r][1] or '(not created yet)'}" for r in updates)
        log(f"{path}: Status and Run not written ({why[:200]}); the runs are in the store: "
            f"{runs}")
        return
    for row in lost:
        status, run_id = updates[row]
        log(f"{path}:{row}: row {names[row]} (line {row} when the launch read the sheet) is no "
            f"longer in the sheet (removed, or its cells edited while it ran): its Status "
            f"{status.split()[0]} and Run {run_id} were not written; its run is in the store")
