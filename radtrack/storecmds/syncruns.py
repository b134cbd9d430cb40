"""``radtrack sync`` creates the runs a launcher could not (its store was away the whole time).

Each row's ``create.json`` (radtrack/store/runfiles.py) holds what the launcher's Recorder
(radtrack/run/record.py) would have used: the experiment, the workload number (0: the next
one, taken now), the workload run's and the row's names, tags and start times, the launch
id; and whatever the Recorder did create before the store went away (experiment, parent).
The rows of one workload (one ``workload_key``) get one workload run, named and tagged as
the launcher names and tags it, so readers cannot tell a synced launch from another.

A launcher killed between creating a run and noting it (``create.json``'s ``parent_id``, a
row's ``meta.json``) left that run in the store, RUNNING, and unknown to the folders: sync
adopts it (the workload run by its launch id, workload number and role; a row's by its
parent and letter) instead of creating a second one, so the rest of sync ends it with the
row's true status.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.errors import RadtrackError
from radtrack.spec import RunSpec
from radtrack.store import runfiles
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.store.handle import StoreHandle


def create_runs(folders: list[Path], store: StoreHandle | None) -> list[str]:
    """Create the workload run (unless it exists) and a run per folder of one workload; each
    folder gets its ``meta.json``. Returns what was done, a line each. Raises when the store
    is away or refuses (the folders stay as they were). ``store``: the command's (``radtrack
    sync --tracking-uri``), else None: the one the launcher recorded, its handle made here."""
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    from radtrack.store.handle import StoreHandle
    from radtrack.store.identity import acting_as, own_workload_run
    from radtrack.store.reach import raise_if_away
    from radtrack.store.spool import write_meta
    from radtrack.store.tracking import (
        create_workload_run,
        experiment_id,
        next_workload_number,
        row_run_name,
        with_password,
        workload_run_name,
    )

    records = [(f, runfiles.read(f, runfiles.CREATE_FILE) or {}) for f in folders]
    first = records[0][1]
    recorded_uri = first.get("tracking_uri") or ""
    store = store or StoreHandle(with_password(recorded_uri))
    uri = store.uri
    raise_if_away(uri)  # a database that is down: said now, not after MLflow's retries
    c = store.mlflow
    lines: list[str] = []
    # the launch's own id: its runs' names and tags are those the launcher would have made
    with acting_as(str(first.get("launch_id") or "")):
        exp_id = str(first.get("experiment_id") or experiment_id(c, uri, first["experiment"]))
        number = int(first.get("workload") or 0) or next_workload_number(c, exp_id)
        spec = RunSpec(experiment=first["experiment"], workload=number,
                       file=Path(first.get("script") or "script.py"),
                       sheet=Path(first["sheet"]) if first.get("sheet") else None)
        parent_id, parent_name = first.get("parent_id") or "", first.get("parent_name") or ""
        made = (own_workload_run(c, exp_id, number)
                if not parent_id and first.get("launch_id") and first.get("workload") else None)
        if made is not None:  # created by the launcher, which died before noting it
            parent_id, parent_name = made.info.run_id, made.info.run_name
            lines.append(f"adopted workload run {parent_id} ({parent_name}), created by the "
                         "launcher before it stopped")
        if not parent_id:
            name = workload_run_name(c, exp_id, spec)
            tags = {**(first.get("parent_tags") or {}), schema.WORKLOAD: str(number)}
            parent = create_workload_run(c, exp_id, spec, name, tags=tags,
                                         start_time=first.get("parent_start_ms"))
            parent_id, parent_name = _created(uri, parent), parent.info.run_name
            lines.append(f"created workload run {parent_id} ({parent_name}) in experiment "
                         f"{first['experiment']!r}")
        for folder, _ in records:
            runfiles.update(folder, runfiles.CREATE_FILE, experiment_id=exp_id, workload=number,
                            parent_id=parent_id, parent_name=parent_name)
        for folder, rec in records:
            row_spec = replace(spec, letter=rec.get("letter") or "A", run_name=rec.get("run_name"),
                               row=rec.get("row"))
            name = row_run_name(row_spec, parent_name)
            made = c.search_runs([exp_id], max_results=1, filter_string=(
                f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent_id}' and "
                f"tags.`{schema.LETTER}` = '{row_spec.letter}'"))
            if made:  # the launcher created it and died before binding the folder
                write_meta(folder, made[0].info.run_id, rec.get("tracking_uri") or recorded_uri)
                lines.append(f"{folder.name}: adopted run {made[0].info.run_id} "
                             f"({made[0].info.run_name}), created by the launcher before it stopped")
                continue
            tags = {**(rec.get("row_tags") or {}), MLFLOW_PARENT_RUN_ID: parent_id,
                    schema.WORKLOAD: str(number)}
            run = c.create_run(exp_id, run_name=name, tags=tags, start_time=rec.get("row_start_ms"))
            write_meta(folder, _created(uri, run), rec.get("tracking_uri") or recorded_uri)
            lines.append(f"{folder.name}: created run {run.info.run_id} ({name})")
    return lines


def _created(uri: str, run: Any) -> str:
    """The id of a run the store says it created: MLflow's client reads any JSON answer
    into a run, so a server that answers HTTP but is no MLflow server (its experiment
    search looking like one) gives a run without an id, which nothing may be bound to."""
    if not run.info.run_id:
        from radtrack.store.reach import not_mlflow_line

        raise RadtrackError(not_mlflow_line(uri, "POST runs/create", "no run id in its answer"))
    return str(run.info.run_id)
