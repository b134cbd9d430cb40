"""The executor contract: what every place a launch's workloads can run offers the command.

``radtrack`` (radtrack/cli.py) checks what every launch shares (the flags, the target),
picks one executor (radtrack/executor_registry.py ``pick``) and hands it a :class:`Launch`;
the executor checks its own flags and what its rows need, then runs or submits the
workloads and returns the command's exit code. The executors: ``local``
(radtrack/executors/local.py), ``slurm`` (radtrack/executors/slurm_executor.py) and the
multi-node launch started by hand on each node (radtrack/executors/multinode.py).

An executor's own row options (a SLURM partition, ...) are sheet columns and flags it
declares as :class:`RowOption`; the sheet reader stores them in the row's
``RunSpec.executor_options`` (a row's common spec names none of them), and only the
executor that declared them reads them.

``radtrack status SHEET`` and ``radtrack cancel SHEET`` (radtrack/launch_control.py) ask
the executors in turn (radtrack/executor_registry.py ``control``) for what they run or ran
from the sheet: the first that has any of it answers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from radtrack.spec import RunSpec

if TYPE_CHECKING:
    from radtrack.postrun.workload_end import StoredReader
    from radtrack.store.handle import StoreHandle


@dataclass(frozen=True)
class RowOption:
    """One executor option a row carries: read from the sheet's ``column`` (None: flag
    only) or, for every row, from the flag whose argparse dest is ``flag`` (None: column
    only); ``parse`` checks the text and returns it as the executor takes it (raises
    ValueError naming what is wrong). Stored under ``key`` in RunSpec.executor_options."""

    key: str
    column: str | None
    flag: str | None
    parse: Callable[[str], str]


@dataclass
class Launch:
    """What the command hands its executor: the target, the parsed flags and the store."""

    target: Path  # the script or sheet, absolute
    sheet: bool  # an experiment sheet (.csv), else one script
    args: argparse.Namespace  # every flag as parsed (the executor reads its own)
    store: StoreHandle  # the tracking URI, resolved once by the command, and its clients
    defaults: dict[str, object] = field(default_factory=dict)  # what a sheet's rows inherit
    spec: RunSpec | None = None  # a single script's run; None for a sheet
    # the reader of a co-located workload's stored runs (radtrack/stored_reader.py): the
    # command hands it down, the executor passes it to the launch, which imports no reader
    read_stored: StoredReader | None = None

    @property
    def uri(self) -> str:
        return self.store.uri


@dataclass(frozen=True)
class Enquiry:
    """What ``radtrack status`` / ``radtrack cancel`` hand each executor they ask."""

    target: Path  # the sheet, absolute (the command checked it exists)
    tracking_uri: str | None = None  # --tracking-uri; None: the store the launch used


class Executor(Protocol):
    """Where a launch's workloads run. One module (or class) per executor, registered by
    name in radtrack/executor_registry.py ``EXECUTORS``."""

    #: what ``--executor`` / ``$RADTRACK_EXECUTOR`` call it
    name: str
    #: argparse dests of the flags only this executor takes: any other executor refuses
    #: them ("--detach only apply with --executor slurm")
    flags: tuple[str, ...]
    #: the options each row carries for this executor (sheet columns and flags)
    row_options: tuple[RowOption, ...]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Its flags, as a group of the launch's parser (radtrack/cli_parser.py)."""

    def why_end_waits(self, asked: bool) -> str | None:
        """None where the scripts run in this process, so their end may be detached
        (radtrack/run/front.py); else why it cannot ("" when ``asked`` is False: nothing
        to say)."""

    def check(self, launch: Launch) -> None:
        """Its own flags and the kind of target it runs; raises RadtrackError naming the
        flag, before any row is read."""

    def check_rows(self, specs: list[RunSpec], sheet: Path | None) -> None:
        """What a row needs to run here; raises SheetError (or RadtrackError) naming the
        row and column."""

    def submit(self, launch: Launch) -> int:
        """Run or submit the launch's workloads (waiting as the executor does); the
        command's exit code."""

    def status(self, enquiry: Enquiry) -> int | None:
        """Report what it runs or ran from the sheet, one line per workload on stdout (the
        sheet brought up to date where the executor keeps its own record); the command's
        exit code (0: every workload finished); None where it ran nothing of the sheet."""

    def cancel(self, enquiry: Enquiry) -> int | None:
        """Stop what it still runs from the sheet, as Ctrl-C in its launcher would, saying
        so on stdout; the command's exit code; None where it runs nothing of the sheet."""
