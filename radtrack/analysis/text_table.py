"""Frames as aligned text: the tables ``radtrack report`` prints, studies included."""

from __future__ import annotations

import math

import pandas as pd


def _fmt(x: object) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        if abs(x) >= 1000:
            return f"{x:.0f}"
        if abs(x) >= 1 or x == 0:
            return f"{x:.2f}"
        return f"{x:.3g}"
    return str(x)


def render(frame: pd.DataFrame, columns: list[str] | None = None) -> str:
    """A frame as aligned text, NaN as '-', without the index."""
    if frame.empty:
        return "(none)"
    view = frame[[c for c in columns if c in frame.columns]] if columns else frame
    return view.to_string(index=False, na_rep="-", formatters={c: _fmt for c in view.columns})


WIDTH = 120  # the printed report's line width (radtrack report; --wide lifts it)
MAX_CELL = 40  # a longer text cell is cut (with '…') in the fitted view


def _missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _cut(text: str, limit: int, middle: bool = False) -> str:
    """``text`` within ``limit`` characters: a path keeps its end (the file's name), other
    text its start, or with ``middle`` its start and its last third (a run's name keeps its
    workload and letter: ``long-experiment-n…-name-12 A``)."""
    if len(text) <= limit:
        return text
    if "/" in text and " " not in text:
        return "…" + text[len(text) - limit + 1:]
    if middle:
        tail = (limit - 1) // 3
        return text[: limit - 1 - tail] + "…" + text[len(text) - tail:]
    return text[: limit - 1] + "…"


def _cut_cells(values: list[str], limit: int, middle: bool = False) -> list[str]:
    """A column's cells within ``limit``: cut at their end, or in the middle with ``middle``
    or where cutting the end would make distinct cells read alike (runs whose names differ
    in their last characters: ``<experiment>-1 A`` and ``<experiment>-1 B``)."""
    cut = [_cut(v, limit, middle) for v in values]
    if not middle and len(set(cut)) < len(set(values)):
        cut = [_cut(v, limit, middle=True) for v in values]
    return cut


def fit(frame: pd.DataFrame, columns: list[str] | None = None, key: list[str] | None = None,
        width: int = WIDTH, max_cell: int = MAX_CELL) -> str:
    """``frame`` as aligned text no line of which is wider than ``width``: the columns
    shown in order, split into as many blocks as it takes, each block led by the ``key``
    columns (the run's name), text cells and headers longer than ``max_cell`` cut with '…'
    (a path at its start, so that its file's name shows; a run's name in its middle, so
    that its workload and letter show), never wrapped. A column is headed
    by its own name, the one the files carry (radtrack/vocab/meaning.py says what it is);
    NaN prints as '-'. Every row keeps its place in every block."""
    if frame.empty:
        return "(none)"
    names = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    key = [c for c in (key or []) if c in names]
    cells: dict[str, list[str]] = {}
    numeric: dict[str, bool] = {}
    for c in names:
        numeric[c] = pd.api.types.is_numeric_dtype(frame[c])
        # a run's name (the key, or a column naming a run) keeps its workload and letter
        middle = c in key or c.endswith("run_name")
        cells[c] = [v.replace("\n", " ") for v in _cut_cells(
            ["-" if _missing(v) else _fmt(v) for v in frame[c].tolist()], max_cell, middle)]
    label = {c: _cut(c, max_cell) for c in names}
    widths = {c: max(len(label[c]), *(len(x) for x in cells[c])) for c in names}
    base = sum(widths[c] + 2 for c in key)
    blocks: list[list[str]] = []
    current: list[str] = []
    used = base
    for c in names:
        if c in key:
            continue
        need = widths[c] + 2
        if current and used + need > width + 2:
            blocks.append(current)
            current, used = [], base
        current.append(c)
        used += need
    if current or not blocks:
        blocks.append(current)
    out = []
    for block in blocks:
        shown = key + block

        def line(values: dict[str, str], shown: list[str] = shown) -> str:
            parts = [values[c].rjust(widths[c]) if numeric[c] else values[c].ljust(widths[c])
                     for c in shown]
            return "  ".join(parts).rstrip()

        rows = [line({c: label[c] for c in shown})]
        rows += [line({c: cells[c][i] for c in shown}) for i in range(len(frame))]
        out.append("\n".join(rows))
    return "\n\n".join(out)


def wrap(text: str, width: int = WIDTH, indent: str = "", first: str = "") -> str:
    """Prose of the report (titles, legends, notes) wrapped to ``width``: the first line
    starts with ``first``, the next ones with ``indent``."""
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=first, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=True)
