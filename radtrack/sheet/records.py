"""Reading a sheet's CSV records with their line numbers, and collecting problems."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Record:
    line: int  # 1-based line where the record starts
    cells: list[str]  # raw cells as the csv module returns them (not stripped)
    first: str = ""  # the record's first physical line, as in the file
    text: str = ""  # the record's physical lines, as in the file (several: a multi-line cell)


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


def physical_lines(text: str) -> list[str]:
    """``text``'s lines as CSV and a text editor count them, ends kept: broken at ``\\n``,
    ``\\r\\n`` and ``\\r`` only (str.splitlines also breaks at U+2028, U+0085, form feeds...,
    which are characters inside a cell, not line ends)."""
    return io.StringIO(text, newline="").readlines()


def read_records(text: str) -> list[Record]:
    """Every non-comment, non-blank CSV record of ``text`` with its starting line number."""
    feed = _LineFeed(physical_lines(text))
    # skipinitialspace: a quoted cell may be padded ('1,  "a,b"') as in radT sheets.
    reader = csv.reader(feed, skipinitialspace=True)
    records = []
    while True:
        feed.at_start = True
        try:
            cells = next(reader)
        except StopIteration:
            break
        records.append(Record(feed.start_line, cells, feed.lines[feed.start_line - 1],
                              "".join(feed.lines[feed.start_line - 1:feed.pos])))
    return records


def open_quote(line: str) -> tuple[int, int] | None:
    """(0-based character, 0-based cell) of a quote that opens a quoted cell on ``line``
    and is not closed before the line ends, read as the csv module reads a record; None
    when every quoted cell on the line closes."""
    text = line.rstrip("\r\n")
    cell, i, n = 0, 0, len(text)
    while i <= n:
        while i < n and text[i] == " ":  # skipinitialspace
            i += 1
        if i < n and text[i] == '"':
            start, i = i, i + 1
            while True:
                if i >= n:
                    return start, cell
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        i += 2
                        continue
                    i += 1
                    break
                i += 1
        # the rest of the cell, up to the next comma, is taken as it is
        while i < n and text[i] != ",":
            i += 1
        cell, i = cell + 1, i + 1
    return None


def read_text(path: Path) -> tuple[str, bool]:
    """The sheet's text (newlines untouched) and whether it started with a UTF-8 BOM."""
    raw = path.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    return raw.decode("utf-8-sig"), bom


class Problems:
    """Every problem found in a sheet, each as ``<file>:<line>: column <C>: <message>``."""

    def __init__(self, path: Path):
        self.path = path
        self.items: list[str] = []

    def add(self, message: str, line: int | None = None, column: str | None = None) -> None:
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        if column:
            where += f": column {column}"
        self.items.append(f"{where}: {message}")


def line_of(problem: str) -> int:
    """Sort key: problems in line order (whole-file problems first), stable otherwise."""
    m = re.match(r"^.*?:(\d+): ", problem)
    return int(m[1]) if m else 0
