"""Finding a row again in a sheet edited while it runs: by what the row says, not its line.

A launch reads the sheet once; its rows run for minutes or days, and the user may edit the
sheet meanwhile (a row or a comment inserted above, rows deleted or moved). The write-back
(writeback.py) must land each row's Status and Run in the row that ran, so a row is known by
its identity, taken when the sheet was read (:func:`row_key`): its cells other than those
radtrack writes (Status, Run, Job), and its Run cell as it was then (two identical rows of a
sheet are told apart by it once one of them ran). Rows that look alike in both are matched
in their order; where the sheet now holds more of them than ran (a copy pasted above or
below), the one whose neighbours as read are still beside it is the row that ran: each
key carries its neighbours' (:func:`with_neighbours`), never compared as identity. A row
found nowhere (deleted, or its cells edited) is reported by the caller, never written
somewhere else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from radtrack.sheet.columns import COLUMNS, column_key
from radtrack.sheet.records import Record

WRITTEN = ("Status", "Run", "Job")  # radtrack's cells: not part of a row's identity
_SEP = "\x1f"  # unit separator: no cell of a CSV row holds it
_NEAR = "\x1e"  # record separator: after a row's identity, its neighbours' (with_neighbours)


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


def with_neighbours(keys: Sequence[str]) -> list[str]:
    """Each row's :func:`row_key` followed by those of the rows above and below it as read
    ("" at an end): what tells the row that ran from a copy of it pasted beside it."""
    near = ["", *keys, ""]
    return [_NEAR.join((k, near[i], near[i + 2])) for i, k in enumerate(keys)]


def _parts(key: str) -> tuple[str, tuple[str, str] | None]:
    """(identity, (the key above, the key below) as read, or None for a key without them)."""
    identity, *near = key.split(_NEAR)
    return identity, (near[0], near[1]) if len(near) == 2 else None


def _pick(lines: Sequence[int], near_then: Mapping[int, tuple[str, str] | None], candidates: Sequence[int],
          near_now: Mapping[int, tuple[str, str]]) -> dict[int, int]:
    """Rows alike (``lines`` as read) -> lines now among ``candidates``, in their order: with
    more candidates than rows, each takes the one with more of its neighbours as read still
    beside it (the earliest among equals: a copy pasted right above or below a row leaves
    the two alike, whichever it was), leaving enough for the rows after it."""
    lines, candidates = sorted(lines), sorted(candidates)
    if len(candidates) <= len(lines):
        return dict(zip(lines, candidates, strict=False))
    out: dict[int, int] = {}
    lo = 0
    for n, line in enumerate(lines):
        hi = len(candidates) - (len(lines) - n)  # the last index this row may take
        then = near_then.get(line)

        def score(i: int, then: tuple[str, str] | None = then) -> int:
            now = near_now.get(candidates[i], ("", ""))
            # a sheet's end beside both is no evidence (a copy appended after the last row)
            return 0 if then is None else sum(a == b != "" for a, b in zip(now, then, strict=True))

        best = max(range(lo, hi + 1), key=lambda i: (score(i), -i))
        out[line] = candidates[best]
        lo = best + 1
    return out


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
    keys_now = [row_key(written.values(), rec.cells) for rec in records[1:]]
    near_now = {rec.line: _parts(k)[1] or ("", "") for rec, k in zip(records[1:], with_neighbours(keys_now),
                                                                    strict=True)}
    for rec, key in zip(records[1:], keys_now, strict=True):
        cell = rec.cells[run].strip() if run is not None and run < len(rec.cells) else ""
        now[(key, cell)].append(rec.line)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    near_then: dict[int, tuple[str, str] | None] = {}
    identities: dict[int, str] = {}
    for line, (key, run_then) in wanted.items():
        identities[line], near_then[line] = _parts(key)
        groups[(identities[line], run_then.strip())].append(line)
    found: dict[int, int] = {}
    for identity, lines in groups.items():
        # rows alike in all of it keep their order (one inserted above shifts them all)
        found.update(_pick(lines, near_then, now.get(identity, []), near_now))
    # then by the cells alone, where the Run cell now is blank or the run being written
    # (never a row that holds another run's id: an identical row that ran elsewhere)
    taken = set(found.values())
    by_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (key, cell), lines_now in now.items():
        by_key[key] += [(line, cell) for line in lines_now if line not in taken]
    for line in sorted(set(wanted) - set(found)):
        key, run_then = identities[line], wanted[line][1]
        ok = {"", run_then.strip(), (writing or {}).get(line, "").strip()}
        fits = [x for x in sorted(by_key[key]) if x[1] in ok]
        pick = _pick([line], near_then, [x[0] for x in fits], near_now).get(line)
        match = next((x for x in fits if x[0] == pick), None)
        if match is not None:
            found[line] = match[0]
            by_key[key].remove(match)
    return found
