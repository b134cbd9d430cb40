"""Reading a sheet's CSV records with their line numbers, and collecting problems."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


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
