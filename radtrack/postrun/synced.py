"""The launcher's end-of-workload step, run by ``radtrack sync`` for a workload whose end the
launcher could not store (its tracking store was away past ``RADTRACK_STORE_WAIT_S``).

Once every row of such a workload is stored (its samples, its end), sync rebuilds each row
as the launcher held it when its scripts ended, from the row's spool folder (which stays
until this step is done): the listeners' traces from the spooled samples, their probes, the
tags, status, exit code, start and end from ``finish.json``, the row's spec (collocation,
carbon figures) and creation tags from ``create.json``, the scratch folder with its code
windows and the script's MLflow-run events. It then runs the end of the workload on them,
the launcher's own step (radtrack/postrun/workload_end.py): the workload run's start skew and placement logs, co-location
accounting and workload totals (radtrack/postrun/accounting.py), the footprint, code
windows' energy (radtrack/postrun/window_energy.py) and the binding of the script's own
MLflow runs (radtrack/postrun/script_runs.py). A synced workload then holds what a live one
holds; what the launcher printed (energy lines, STP/ANTT) sync prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.spec import RunSpec
from radtrack.store import runfiles
from radtrack.vocab import schema

if TYPE_CHECKING:
    import pandas as pd

    from radtrack.listeners.protocol import Hello
    from radtrack.postrun.workload_end import StoredReader
    from radtrack.store.handle import StoreHandle

@dataclass
class SpooledSink:
    """What the end step reads of a row's sink: its traces and its listeners' probes."""

    dir: Path
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    hellos: dict[str, Hello] = field(default_factory=dict)

    def hello(self, listener: str) -> Hello | None:
        return self.hellos.get(listener)


def read_sink(folder: Path) -> SpooledSink:
    """A row's traces and probes, from its spool folder's ``<listener>.jsonl`` files, over the
    run's span as the launcher's sink cuts them (radtrack/store/spans.py)."""
    from radtrack.listeners.protocol import Hello, late_keys
    from radtrack.store.recovery import messages, read_spool
    from radtrack.store.sink import spooled_span
    from radtrack.store.spans import span_frame
    from radtrack.store.spool import SPOOL_SUFFIX

    sink = SpooledSink(folder)
    span = spooled_span(folder)
    for path in sorted(folder.glob(f"*{SPOOL_SUFFIX}")):
        name = path.name[:-len(SPOOL_SUFFIX)]
        # the last hello: a listener whose metrics grew says hello again (radtrack/listeners/gpu_follow.py)
        hello = None
        for m in messages(path):
            hello = m if isinstance(m, Hello) else hello
        if hello is not None:
            sink.hellos[name] = hello
        frame, _ = span_frame(read_spool(path), span.start, span.end, late_keys(hello))
        if not frame.empty:
            sink.frames[name] = frame
    return sink


@dataclass
class SpooledRow:
    """A row as the launcher held it when its script ended (radtrack/postrun/workload_end.py
    ``EndRow``), rebuilt from its spool folder."""

    spec: RunSpec
    run_id: str
    folder: Path
    sink: SpooledSink | None
    started: float
    ended: float | None
    tags: dict[str, str]
    status: str
    exit_code: int | None
    params: dict[str, str]
    record_tags: dict[str, str]
    name: str = ""
    stopped_by: str = ""  # the spool does not say: as the launcher's row before it stopped one

    def __post_init__(self) -> None:
        self.name = self.name or self.spec.run_name or self.spec.default_run_name()


def spooled_row(folder: Path, run_id: str) -> SpooledRow:
    """The row as the launcher held it when its script ended, from its spool folder."""
    create = runfiles.read(folder, runfiles.CREATE_FILE) or {}
    finish = runfiles.read(folder, runfiles.FINISH_FILE) or {}
    record = create.get("spec") or {}
    tags = dict(create.get("row_tags") or {})
    spec = RunSpec(experiment=str(create.get("experiment") or ""),
                   workload=int(create.get("workload") or 0),
                   file=Path(create.get("script") or "script.py"),
                   collocation=str(record.get("collocation") or tags.get(schema.COLLOCATION) or "-"),
                   carbon_intensity=record.get("carbon_intensity"), pue=record.get("pue"),
                   carbon_source=str(record.get("carbon_source") or ""),
                   letter=str(create.get("letter") or "A"), run_name=create.get("run_name"),
                   row=create.get("row"),
                   sheet=Path(create["sheet"]) if create.get("sheet") else None)
    exit_code = finish.get("exit_code")
    return SpooledRow(spec=spec, run_id=run_id, folder=Path(finish.get("folder") or folder),
                      sink=read_sink(folder), started=float(finish.get("start") or 0.0),
                      ended=float(finish.get("end") or 0.0), tags=dict(finish.get("tags") or {}),
                      status=str(finish.get("status") or ""),
                      exit_code=int(exit_code) if exit_code is not None else None,
                      params=dict(finish.get("params") or {}), record_tags=tags)


def end_workload(store: StoreHandle, parent_id: str, folders: list[tuple[Path, str]],
                 read_stored: StoredReader, log: Any = print) -> None:
    """The launcher's end-of-workload step for the rows in ``folders`` ((spool folder, run
    id) each, every row of the workload), before its workload run is closed. Accounting,
    windows and binding report their own failures and never raise (as in the launcher);
    the parent's skew and placement logs raise when the store is away."""
    from radtrack.postrun import workload_end

    rows = [spooled_row(folder, run_id) for folder, run_id in folders]
    rows.sort(key=lambda r: r.spec.letter)
    end = workload_end.WorkloadEnd(parent_id, store, list(rows), read_stored,
                                   placement_logs(folders), log)
    client = store.mlflow
    workload_end.store_parent(client, end)
    accounts = workload_end.account(client, end)
    workload_end.bind_script_runs(client, end, accounts)
    client.set_tag(parent_id, schema.SYNCED_END, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    log(f"{parent_id}: its workload's end step (accounting, code windows, the script's runs) "
        f"done from the spooled samples of {len(rows)} row(s)")


def placement_logs(folders: list[tuple[Path, str]]) -> list[Path]:
    """The MPS control logs of the workload's placement (runs/<workload key>/mps/*/log)."""
    for folder, _ in folders:
        create = runfiles.read(folder, runfiles.CREATE_FILE) or {}
        finish = runfiles.read(folder, runfiles.FINISH_FILE) or {}
        if create.get("workload_key") and finish.get("folder"):
            scratch = Path(finish["folder"]).parent / str(create["workload_key"])
            return sorted(p for p in scratch.glob("mps/*/log/*.log") if p.is_file())
    return []
