"""What the end of a workload reads of each row and its sink: typed protocols, so that the
launcher's rows and the rows ``radtrack sync`` rebuilds from spools both fit, and the
end-of-workload modules (accounting, windows, script runs) need no launcher type."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from radtrack.spec import RunSpec

if TYPE_CHECKING:
    import pandas as pd


class EndSink(Protocol):
    """What the end step reads of a row's sink: its traces (listener -> wide frame) and
    its spool folder."""

    dir: Path
    frames: dict[str, pd.DataFrame]

    def hello(self, listener: str) -> Any: ...


class EndRow(Protocol):
    """What the end step reads of one row of the workload."""

    spec: RunSpec
    run_id: str
    name: str
    folder: Path  # the row's scratch folder (code windows, script-run events, ``released``)
    sink: EndSink | None
    started: float  # unix s; 0 when it never started
    ended: float | None
    tags: dict[str, str]  # the probes' and the end's tags (accounting adds its own)
    status: str
    exit_code: int | None
    stopped_by: str  # what stopped the row ("signal", ...; radtrack/run/rows.py), "" nothing
    params: dict[str, str]
    record_tags: dict[str, str]


__all__ = ["EndRow", "EndSink"]
