"""Experiment sheets: parse and validate a CSV of runs, write statuses back.

A sheet is parsed whole and every problem is reported at once, each as
``<file>:<line>: column <Column>: <message>``, before anything starts. docs/sheets.md
describes the format; this module is its single implementation.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from radtrack import gpus as gpus_mod
from radtrack.errors import RadtrackError, SheetError
from radtrack.listeners import registry
from radtrack.placement.clocks import clock_range
from radtrack.spec import RunSpec

REQUIRED = ("Experiment", "Workload", "Status", "Run", "Devices", "Collocation", "File",
            "Listeners", "Params")
OPTIONAL = ("Interval", "MaxEpoch", "MaxTime", "Env", "Clocks", "PowerLimit", "RunName",
            "Manual")
MPS_CONTROL = "nvidia-cuda-mps-control"
STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED")

_MIG_PROFILE_RE = re.compile(r"^\d+g\.\d+gb(\+[a-z0-9]+)*$")
_INDEX_RE = re.compile(r"^\d+$")
_UUID_RE = re.compile(r"^GPU-[0-9a-f]{4,}[0-9a-f-]*$", re.IGNORECASE)
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TRUE = {"1", "true", "yes", "y", "on"}
_FALSE = {"0", "false", "no", "n", "off"}


def _key(name: str) -> str:
    """Header matching ignores case, spaces, '_' and '-' ("Max Epoch" == "max_epoch")."""
    return re.sub(r"[\s_\-]", "", name).lower()


_COLUMNS = {_key(c): c for c in (*REQUIRED, *OPTIONAL)}


def is_sheet(path: str | Path) -> bool:
    """Whether a launch argument names an experiment sheet (a ``.csv`` file)."""
    return Path(path).suffix.lower() == ".csv"


# --- reading records with their line numbers ---------------------------------------------


@dataclass
class Record:
    line: int  # 1-based line where the record starts
    cells: list[str]  # raw cells as the csv module returns them (not stripped)


class _LineFeed:
    """Feeds csv.reader physical lines, skipping comment and blank lines between records.

    csv.reader pulls continuation lines of a quoted multi-line cell itself; ``at_start``
    is set before each record so a '#' inside such a cell is not mistaken for a comment.
    """

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.pos = 0
        self.at_start = True
        self.start_line = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            self.pos += 1
            if self.at_start:
                text = line.strip()
                if not text or text.startswith("#"):
                    continue
                self.at_start = False
                self.start_line = self.pos
            return line
        raise StopIteration


def read_records(text: str) -> list[Record]:
    """Every non-comment, non-blank CSV record of ``text`` with its starting line number."""
    feed = _LineFeed(text.splitlines(keepends=True))
    # skipinitialspace: a quoted cell may be padded ('1,  "a,b"') as in radT sheets.
    reader = csv.reader(feed, skipinitialspace=True)
    records = []
    while True:
        feed.at_start = True
        try:
            cells = next(reader)
        except StopIteration:
            break
        records.append(Record(feed.start_line, cells))
    return records


def _read_text(path: Path) -> tuple[str, bool]:
    """The sheet's text (newlines untouched) and whether it started with a UTF-8 BOM."""
    raw = path.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    return raw.decode("utf-8-sig"), bom


# --- parsing cells ---------------------------------------------------------------------


class _Problems:
    def __init__(self, path: Path):
        self.path = path
        self.items: list[str] = []

    def add(self, message: str, line: int | None = None, column: str | None = None) -> None:
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        if column:
            where += f": column {column}"
        self.items.append(f"{where}: {message}")


def parse_devices(text: str) -> list[str]:
    """'0', '1+2', 'GPU-<uuid>' -> list of device tokens; raises ValueError when malformed."""
    if not text or text == "-":
        return []
    tokens = [t.strip() for t in text.split("+")]
    out = []
    for t in tokens:
        if _INDEX_RE.match(t):
            out.append(str(int(t)))
        elif _UUID_RE.match(t):
            out.append(t)
        elif t.upper().startswith("MIG-"):
            raise ValueError(f"{t!r} is a MIG device; give its GPU and a MIG profile in "
                             "Collocation instead (radtrack creates the instance)")
        else:
            raise ValueError(f"{t!r} is not a GPU index (0, 1+2) or a GPU UUID (GPU-...)")
    if len(set(out)) != len(out):
        raise ValueError(f"{text!r} names a device twice")
    return out


def parse_collocation(text: str) -> str:
    """'-'/'' -> '-', 'MPS' -> 'mps', 'MPS:50' -> 'mps:50', '1g.10gb' -> '1g.10gb'."""
    c = text.strip().lower()
    if c in ("", "-"):
        return "-"
    if c == "mps":
        return "mps"
    if c.startswith("mps:"):
        pct = c[4:].strip()
        if not pct.isdigit() or not 1 <= int(pct) <= 100:
            raise ValueError(f"{text!r}: MPS:<percent> needs a whole percentage from 1 to 100")
        return f"mps:{int(pct)}"
    if _MIG_PROFILE_RE.match(c):
        return c
    raise ValueError(f"{text!r} is not '-', 'MPS', 'MPS:<1-100>' or a MIG profile such as "
                     "'1g.10gb'")


def parse_clocks(text: str) -> str:
    """'1410' -> '1410' (locked), '1200-1980' -> '1200,1980' (range), MHz."""
    parts = [p.strip() for p in text.split("-")]
    if len(parts) not in (1, 2) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"{text!r}: give an SM clock in MHz ('1410') or a range ('1200-1980')")
    values = [int(p) for p in parts]
    if len(values) == 2 and values[0] > values[1]:
        raise ValueError(f"{text!r}: the range's minimum is above its maximum")
    return ",".join(str(v) for v in values)


def parse_env(text: str) -> dict[str, str]:
    """'A=1 B="x y"' -> {'A': '1', 'B': 'x y'}."""
    out = {}
    for item in shlex.split(text):
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY_RE.match(key):
            raise ValueError(f"{item!r} is not KEY=VALUE (space-separated, KEY a variable name)")
        out[key] = value
    return out


def _positive(text: str, kind: type, unit: str) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a {'whole ' if kind is int else ''}number"
                         f"{f' ({unit})' if unit else ''}") from None
    if value <= 0:
        raise ValueError(f"{text!r} must be greater than 0")
    return value


def _bool(text: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"{text!r} is not true/false")


def status_word(cell: str) -> str:
    """The status part of a Status cell ('FINISHED exp-3 A' -> 'FINISHED'); '' when empty."""
    parts = cell.split()
    return parts[0].upper() if parts else ""


def status_cell(status: str, run_name: str | None) -> str:
    """The Status cell radtrack writes: ``<STATUS> <run name>``, e.g. 'FINISHED exp-3 A'."""
    return f"{status.upper()} {run_name}" if run_name else status.upper()


# --- read_sheet ----------------------------------------------------------------------------


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
    problems = _Problems(path)
    try:
        text, _ = _read_text(path)
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
    _check_workloads(specs, problems, host)
    if check_host and parsed:
        # Rows with other problems are checked too, so that one run shows every problem.
        _check_host(parsed, problems, host)
    problems.items.sort(key=_line_of)
    if problems.items:
        raise SheetError(problems.items)
    return specs


def _parse_header(header: Record, problems: _Problems) -> dict[str, int]:
    columns: dict[str, int] = {}
    for i, raw in enumerate(header.cells):
        name = raw.strip()
        if not name:
            if any(c.strip() for c in header.cells[i + 1:]):
                problems.add(f"header cell {i + 1} is empty", header.line)
            continue
        canonical = _COLUMNS.get(_key(name))
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
               sheet: Path, problems: _Problems) -> tuple[RunSpec, bool]:
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
            if not script.is_file():
                problems.add(f"script {file_text!r} not found (looked for {script})", rec.line,
                             "File")
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
    field("Interval", "interval", lambda t: float(_positive(t, float, "seconds")))
    field("MaxEpoch", "max_epoch", lambda t: int(_positive(t, int, "epochs")))
    field("MaxTime", "max_time", lambda t: float(_positive(t, float, "minutes")))
    field("PowerLimit", "power_limit", lambda t: float(_positive(t, float, "watts")))
    field("Clocks", "clocks", parse_clocks)
    field("RunName", "run_name", str)
    field("Manual", "manual", _bool)
    env_text = cell("Env")
    if env_text:
        try:
            kw["env"].update(parse_env(env_text))
        except ValueError as exc:
            problems.add(str(exc), rec.line, "Env")

    kw["status"] = cell("Status")
    kw["run_id"] = cell("Run")
    kw["row"] = rec.line
    kw["sheet"] = sheet
    spec = RunSpec(**kw)
    _check_row(spec, problems)
    return spec, len(problems.items) == before


def _line_of(problem: str) -> int:
    """Sort key: problems in line order (whole-file problems first), stable otherwise."""
    m = re.match(r"^.*?:(\d+): ", problem)
    return int(m[1]) if m else 0


def _check_row(spec: RunSpec, problems: _Problems) -> None:
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


def _by_workload(specs: list[RunSpec]) -> dict[tuple[str, int], list[RunSpec]]:
    groups: dict[tuple[str, int], list[RunSpec]] = {}
    for s in specs:
        groups.setdefault((s.experiment, s.workload), []).append(s)
    return groups


def _check_workloads(specs: list[RunSpec], problems: _Problems,
                     gpus: list[gpus_mod.Gpu] | None = None) -> None:
    """Checks across the rows of one workload: rows that share a GPU must agree."""

    def gpu_key(device: str) -> str:
        # The same GPU may be written as an index in one row and a UUID in another.
        if gpus:
            idx = gpus_mod.resolve_index(device, gpus)
            if idx is not None:
                return str(idx)
        return device

    for (experiment, workload), rows in _by_workload(specs).items():
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


def _check_host(specs: list[RunSpec], problems: _Problems, host: list[gpus_mod.Gpu]) -> None:
    """Checks against this host: devices exist, MIG profiles offered, MIG mode, tools."""
    profiles: dict[int, dict[str, gpus_mod.MigProfile]] = {}
    wanted: dict[tuple[str, int, int, str], list[RunSpec]] = {}
    mps_missing_reported = False
    for s in specs:
        kind = s.collocation_kind
        if kind == "mps" and shutil.which(MPS_CONTROL) is None and not mps_missing_reported:
            problems.add(f"MPS needs {MPS_CONTROL} on PATH (it comes with the NVIDIA driver)",
                         s.row, "Collocation")
            mps_missing_reported = True
        needs_gpu = kind == "mig" or s.clocks or s.power_limit is not None
        if not host:
            if needs_gpu:
                what = ("MIG" if kind == "mig" else "Clocks" if s.clocks else "PowerLimit")
                problems.add(f"{what} needs an NVIDIA GPU, but nvidia-smi reports none on this "
                             "host", s.row, "Collocation" if kind == "mig" else what)
            continue
        indices = []
        for d in s.devices:
            idx = gpus_mod.resolve_index(d, host)
            if idx is None:
                present = ", ".join(f"{g.index} ({g.uuid})" for g in host)
                problems.add(f"device {d} is not on this host; GPUs here: {present}", s.row,
                             "Devices")
            else:
                indices.append(idx)
        for idx in indices:
            gpu = next(g for g in host if g.index == idx)
            if s.power_limit is not None and gpu.power_min_w is not None \
                    and gpu.power_max_w is not None \
                    and not gpu.power_min_w <= s.power_limit <= gpu.power_max_w:
                problems.add(f"{s.power_limit:g} W is outside GPU {idx}'s range "
                             f"{gpu.power_min_w:g}-{gpu.power_max_w:g} W", s.row, "PowerLimit")
            if s.clocks and gpu.max_sm_clock_mhz and clock_range(s.clocks)[1] > gpu.max_sm_clock_mhz:
                problems.add(f"{s.clocks} MHz exceeds GPU {idx}'s maximum SM clock "
                             f"{gpu.max_sm_clock_mhz} MHz", s.row, "Clocks")
        if kind != "mig" or len(indices) != 1:
            continue
        idx = indices[0]
        gpu = next(g for g in host if g.index == idx)
        if idx not in profiles:
            profiles[idx] = gpus_mod.mig_profiles(idx)
        offered = profiles[idx]
        if not offered:
            problems.add(f"GPU {idx} ({gpu.name}) offers no MIG profiles (it does not support "
                         "MIG)", s.row, "Collocation")
            continue
        if s.collocation not in offered:
            problems.add(f"GPU {idx} ({gpu.name}) does not offer MIG profile {s.collocation}; "
                         f"it offers {', '.join(offered)}", s.row, "Collocation")
            continue
        if not gpu.mig_enabled:
            problems.add(f"MIG mode is {gpu.mig_mode.lower()} on GPU {idx}; radtrack never "
                         f"changes it: enable it with 'sudo nvidia-smi -i {idx} -mig 1', then "
                         f"reset the GPU ('sudo nvidia-smi -i {idx} -r') or reboot",
                         s.row, "Collocation")
            continue
        wanted.setdefault((s.experiment, s.workload, idx, s.collocation), []).append(s)
    for (experiment, workload, idx, profile), rows in wanted.items():
        free = profiles[idx][profile].free
        if len(rows) > free:
            problems.add(f"workload {experiment}-{workload} needs {len(rows)} instances of "
                         f"{profile} on GPU {idx} but only {free} are free", rows[-1].row,
                         "Collocation")


# --- writing statuses back -------------------------------------------------------------------


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
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def write_statuses(path: Path, updates: dict[int, tuple[str, str]]) -> None:
    """Write Status and Run cells of several rows at once, atomically.

    ``updates`` maps a row (1-based line where the record starts) to (Status cell text,
    MLflow run id). Only those cells change; every other byte of the sheet stays as it
    was. A sheet without a Status or Run column gets it appended to its header.
    """
    path = Path(path)
    text, bom = _read_text(path)
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
    names = [_COLUMNS.get(_key(c.strip())) for c in header.cells]
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    index: dict[str, int] = {}
    for column in ("Status", "Run"):
        if column in names:
            index[column] = names.index(column)
        else:
            index[column] = len(header_spans) + len(appended)
            appended.append(column)
    if appended:
        edits.append((header_end, header_end, "".join(f",{c}" for c in appended)))

    for row, (status, run_id) in sorted(updates.items()):
        if row not in data_lines:
            raise SheetError([f"{path}:{row}: no run starts on this line; cannot write its "
                              "status"])
        spans, end = _cell_spans(text, offsets[row - 1])
        values = {index["Status"]: status, index["Run"]: run_id}
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


_CLI_OPTION = {"Devices": "-d/--devices", "Collocation": "-c/--collocation",
               "Listeners": "-l/--listeners", "File": "the script", "Clocks": "Clocks",
               "PowerLimit": "PowerLimit"}


def validate_command_line(spec: RunSpec, *, check_host: bool = True) -> None:
    """The row checks of a sheet, for a single-run launch (a one-row sheet): raise a
    SheetError whose lines name the command-line option at fault."""
    problems = _Problems(Path("command line"))
    _check_row(spec, problems)
    host = gpus_mod.inventory() if check_host else []
    _check_workloads([spec], problems, host)
    if check_host:
        _check_host([spec], problems, host)
    if problems.items:
        out = []
        for item in problems.items:
            for column, option in _CLI_OPTION.items():
                item = item.replace(f"column {column}:", f"{option}:")
            out.append(item)
        raise SheetError(out)
