"""Experiment sheets: parse and validate a CSV of runs, write statuses back.

A sheet is parsed whole and every problem is reported at once, each as
``<file>:<line>: column <Column>: <message>``, before anything starts. docs/sheets.md
describes the format; this package is its single implementation:

- ``columns``: column names, header matching, Status cell words
- ``records``: CSV records with their line numbers, the problem list
- ``cells``: one parser per kind of cell
- ``rows``: ``read_sheet`` (header, rows, RunSpec)
- ``checks``: checks within a row and across a workload's rows; command-line launches
- ``host``: checks against this host's GPUs and tools
- ``writeback``: Status/Run cells written back atomically
"""

from radtrack.device_entries import parse_devices
from radtrack.sheet.cells import (
    parse_clocks,
    parse_collocation,
    parse_env,
)
from radtrack.sheet.checks import validate_command_line
from radtrack.sheet.columns import OPTIONAL, REQUIRED, STATUSES, is_sheet, status_cell, status_word
from radtrack.sheet.host import MPS_CONTROL
from radtrack.sheet.records import Record, read_records
from radtrack.sheet.rows import read_sheet
from radtrack.sheet.writeback import write_status, write_statuses

__all__ = [
    "MPS_CONTROL", "OPTIONAL", "REQUIRED", "STATUSES", "Record", "is_sheet", "parse_clocks",
    "parse_collocation", "parse_devices", "parse_env", "read_records", "read_sheet",
    "status_cell", "status_word", "validate_command_line", "write_status", "write_statuses",
]
