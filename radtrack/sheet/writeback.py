"""Writing Status and Run cells back into a sheet, atomically, every other byte kept."""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from pathlib import Path

from radtrack.errors import SheetError
from radtrack.sheet.columns import COLUMNS, column_key, status_cell
from radtrack.sheet.records import physical_lines, read_records, read_text


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
                   jobs: dict[int, str] | None = None) -> None:
    """Write Status and Run cells of several rows at once, atomically.

    ``updates`` maps a row (1-based line where the record starts) to (Status cell text,
    MLflow run id). Only those cells change; every other byte of the sheet stays as it
    was. A sheet without a Status or Run column gets it appended to its header.
    ``jobs`` maps rows to their Job cell (SLURM job id and state), written only when the
    sheet has a Job column.
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
    _replace_atomically(path, (b"\xef\xbb\xbf" if bom else b"") + out.encode("utf-8"))


def write_status(path: Path, row: int, status: str, run_id: str, *,
                 run_name: str | None = None) -> None:
    """Write one row's Status (``<STATUS> <run name>`` when run_name is given) and Run cells."""
    write_statuses(path, {row: (status_cell(status, run_name) if run_name else status, run_id)})


def _replace_atomically(path: Path, data: bytes) -> None:
    """Write a temp file next to ``path`` and rename it over: the sheet is never half written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
