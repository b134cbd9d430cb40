"""Finding a row again in a sheet edited while it runs: by what the row says, not its line.

A launch reads the sheet once; its rows run for minutes or days, and the user may edit the
sheet meanwhile (a row or a comment inserted above, rows deleted or moved). The write-back
(writeback.py) must land each row's Status and Run in the row that ran, so a row is known by
its identity, taken when the sheet was read (:func:`row_key`): its cells other than those
radtrack writes (Status, Run, Job), and its Run cell as it was then (two identical rows of a
sheet are told apart by it once one of them ran). Rows that look alike in both are matched
in their order. A row found nowhere (deleted,
or its cells edited) is reported by the caller, never written somewhere else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from radtrack.sheet.columns import COLUMNS, column_key
from radtrack.sheet.records import Record

WRITTEN = ("Status", "Run", "Job")  # radtrack's cells: not part of a row's identity
_SEP = "\x1f"  # unit separator: no cell of a CSV row holds it


def written_columns(header: Sequence[str]) -> dict[str, int]:
    """Column -> index of the cells radtrack writes, as ``header`` names them."""
    names = [COLUMNS.get(column_key(c.strip())) for c in header]
    return {name: names.index(name) for name in WRITTEN if name in names}


def row_key(written: Collection[int], cells: Sequence[str]) -> str:
    """A row's identity: its cells, blanks collapsed, but for the ones radtrack writes (their indexes:
    ``written``); trailing empty cells dropped (a write-back may add cells to reach Status/Run)."""
    skip = set(written)
    # blanks collapsed: a multi-line cell reads as one line once parsed (rows.py), and a
    # re-padded cell is the same cell
    kept = [" ".join(c.split()) for i, c in enumerate(cells) if i not in skip]
    while kept and not kept[-1]:
        kept.pop()
    return _SEP.join(kept)


def locate(records: Sequence[Record], wanted: Mapping[int, tuple[str, str]],
           writing: Mapping[int, str] | None = None) -> dict[int, int]:
    """Where each wanted row is now: line when the sheet was read -> line now, for the rows
    found. ``wanted``: line then -> (:func:`row_key`, Run cell then). ``records``: the sheet
    as it is now, its header first. ``writing``: line then -> the run id about to be written
    there: a row whose Run cell radtrack itself changed since the read (a launch that marked
    it, a sync storing it) is still the row when its Run cell is blank or that run id."""
    header = records[0].cells
    written = written_columns(header)
    run = written.get("Run")
    now: dict[tuple[str, str], list[int]] = defaultdict(list)
    for rec in records[1:]:
        cell = rec.cells[run].strip() if run is not None and run < len(rec.cells) else ""
        now[(row_key(written.values(), rec.cells), cell)].append(rec.line)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for line, (key, run_then) in wanted.items():
        groups[(key, run_then.strip())].append(line)
    found: dict[int, int] = {}
    for identity, lines in groups.items():
        # rows alike in all of it keep their order (one inserted above shifts them all)
        found.update(zip(sorted(lines), now.get(identity, []), strict=False))
    # then by the cells alone, where the Run cell now is blank or the run being written
    # (never a row that holds another run's id: an identical row that ran elsewhere)
    taken = set(found.values())
    by_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (key, cell), lines_now in now.items():
        by_key[key] += [(line, cell) for line in lines_now if line not in taken]
    for line in sorted(set(wanted) - set(found)):
        key, run_then = wanted[line]
        ok = {"", run_then.strip(), (writing or {}).get(line, "").strip()}
        match = next((x for x in sorted(by_key[key]) if x[1] in ok), None)
        if match is not None:
            found[line] = match[0]
            by_key[key].remove(match)
    return found
