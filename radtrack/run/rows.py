"""A workload's rows while they run: the state every launch step reads and fills in."""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from radtrack import device_entries
from radtrack.listeners.wrappers import CommandWrapper
from radtrack.run.listen import ListenerProc
from radtrack.run.stopping import GroupStopper
from radtrack.spec import RunSpec
from radtrack.store.sink import Sink


@dataclass
class Row:
    """One row of a workload while it runs."""

    spec: RunSpec
    key: str  # launch-local id: the row's scratch folder and spool, before its run exists
    env: dict[str, str]  # full environment of the workload process
    listeners: list[str]  # sampling listeners to attach
    wrappers: list[type[CommandWrapper]]  # command wrappers (nsys, ncu)
    folder: Path
    run_id: str = ""  # its MLflow run, once the recorder created it
    proc: subprocess.Popen[bytes] | None = None
    stopper: GroupStopper | None = None
    pumps: list[threading.Thread] = field(default_factory=list)
    lprocs: list[ListenerProc] = field(default_factory=list)
    sink: Sink | None = None
    started: float = 0.0  # wall clock, when measurement started
    launcher_cpu0: float | None = None  # the launcher's process CPU (s) then (radtrack/run/cost.py)
    launcher_cpu1: float | None = None  # ... and as its span ended
    ended: float = 0.0
    listening: bool = False
    stopped_by: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    status: str = ""
    exit_code: int | None = None
    params: dict[str, str] = field(default_factory=dict)  # stored at the end (store_row_params)
    exp_id: str = ""
    record_tags: dict[str, str] = field(default_factory=dict)  # the tags it is created with
    placement_tags: dict[str, str] = field(default_factory=dict)
    name: str = ""
    stored_name: str = ""  # the run's name as the store held it at the row's end (finish.store_end)

    def __post_init__(self) -> None:
        self.name = self.name or self.spec.run_name or self.spec.default_run_name()

    @property
    def devices(self) -> list[str]:
        return device_entries.placed_entries(self.env)


class Interrupt:
    """Set by the launcher's SIGINT/SIGTERM handler; checked by the workload loop."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum = 0

    def __call__(self, signum: int, _frame: object) -> None:
        self.signum = signum
        self.event.set()


class NodeHooks(Protocol):
    """Node 0 of a multi-node row (radtrack/nodes/launch.py): told of the rows once they
    exist (before their runs are made) and, once every row ended and before anything is
    stored, waits for the other nodes' ends and sets the rows' status and node tags."""

    def rows_made(self, rows: list[Row]) -> None: ...

    def ended(self, rows: list[Row]) -> None: ...
