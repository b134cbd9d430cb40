"""Run planned workloads one after another: MLflow runs, placement, launch, write-back."""

from __future__ import annotations

import functools
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack import own_threads
from radtrack.errors import PlacementError, RadtrackError
from radtrack.postrun import workload_end
from radtrack.postrun.workload_end import StoredReader, WorkloadEnd
from radtrack.run.detach import after_rows as detach_after
from radtrack.run.launch import (
    Interrupt,
    Row,
    command_for,
    leave_for_sync,
    remove_spools,
    run_workload,
    say,
    store_row_params,
    unavailable,
)
from radtrack.run.record import Recorder
from radtrack.run.rows import NodeHooks
from radtrack.script import env as renv
from radtrack.spec import RunSpec
from radtrack.store.outage import retrying, scrub, wait_s
from radtrack.store.tracking import row_params, row_tags, set_tags
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.listeners.wrappers import CommandWrapper
    from radtrack.store.handle import StoreHandle


def resolve_listeners(spec: RunSpec) -> tuple[list[str], list[type[CommandWrapper]], dict[str, str]]:
    """Sampling listener entries, command-wrapping listener classes, and tags for the rest.

    Whether a sampling listener can run here is not asked yet: that starts NVML (tens of ms
    on a GPU host), so radtrack/run/start.py ``check_listeners`` asks once the row's script
    process exists, and the check overlaps the script's own start-up. A wrapper is checked
    now (it changes the script's command line); so is a name that is unknown or whose plugin
    failed to load (no NVML to start for that)."""
    from radtrack.errors import RadtrackError
    from radtrack.listeners import registry
    from radtrack.listeners.protocol import ListenerChoice
    from radtrack.listeners.wrappers import CommandWrapper

    names = registry.sampling_names() if spec.listeners is None else spec.listeners
    samplers: list[str] = []
    wrappers: list[type[CommandWrapper]] = []
    tags: dict[str, str] = {}
    for entry in names:
        name = ListenerChoice.parse(entry).name  # "dcgm@1": its own interval, kept in the entry
        try:
            cls = registry.get(name)
        except RadtrackError as exc:
            unavailable(tags, name, str(exc))
            continue
        if not issubclass(cls, CommandWrapper):
            samplers.append(entry)
        elif ok := registry.availability(name):
            wrappers.append(cls)
        else:
            unavailable(tags, name, ok.reason)
    return samplers, wrappers, tags


WAIT_LISTENERS_ENV = "RADTRACK_WAIT_LISTENERS"  # "1": scripts start once listeners read


def run_workloads(workloads: list[list[RunSpec]], store: StoreHandle, grace: float = 10.0,
                  sheet: Path | None = None, wait_listeners: bool | None = None,
                  nodes: NodeHooks | None = None, *, read_stored: StoredReader | None) -> int:
    """Run every workload; return the launcher's exit code (0 all finished, 1 some failed,
    130 interrupted). The scripts start at once, or, with ``wait_listeners``, once every
    listener has taken its first reading; by default (None; ``$RADTRACK_WAIT_LISTENERS``
    0 or 1 overrides) only a workload with a GPU power listener waits, so that the energy
    counter covers its scripts from their first instant (radtrack/run/start.py). ``nodes``:
    node 0 of a multi-node row (radtrack/nodes/), told of the rows and their end. ``store``:
    the command's handle (radtrack/store/handle.py); each workload opens its own clients.
    ``read_stored``: the reader of a co-located workload's stored runs and solo baselines
    (radtrack/analysis/workload_runs.py), handed down by the entry at the top (the command,
    a SLURM job's batch script): the launch imports no reader; None only where every
    workload has one row (a multi-node row), which reads nothing back."""
    if wait_listeners is None and os.environ.get(WAIT_LISTENERS_ENV, "") in ("0", "1"):
        wait_listeners = os.environ[WAIT_LISTENERS_ENV] == "1"
    interrupt = Interrupt()
    old = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    worst = 0
    try:
        for i, specs in enumerate(workloads):
            # the last workload's end may go on in the background (radtrack/run/detach.py)
            detach = (functools.partial(detach_after, interrupt=interrupt, worst=worst)
                      if i == len(workloads) - 1 else None)
            statuses = _run_one(store, specs, interrupt, grace, wait_listeners, detach, nodes,
                                read_stored)
            if sheet is not None:
                from radtrack.sheet.writeback import write_ran_rows

                write_ran_rows(sheet, specs, statuses, say)
            if any(s != "FINISHED" for s, _, _ in statuses):
                worst = 1
            if interrupt.event.is_set():
                say("interrupted: remaining workloads not started")
                return 130
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return worst


def _run_one(store: StoreHandle, specs: list[RunSpec], interrupt: Interrupt, grace: float,
             wait_listeners: bool = False,
             detach: Callable[..., bool] | None = None,
             nodes: NodeHooks | None = None,
             read_stored: StoredReader | None = None) -> list[tuple[str, str, str]]:
    from radtrack.placement import WorkloadPlacement

    if read_stored is None and len(specs) > 1:
        raise RadtrackError(f"internal: workload {specs[0].experiment}-{specs[0].workload} has "
                            f"{len(specs)} rows but its launch was handed no reader of stored runs")

    uri, first = store.uri, specs[0]
    if first.workload:  # else a CLI launch, numbered when its run is made (run/record.py)
        say(f"workload {first.experiment}-{first.workload}: {len(specs)} row(s)")
    rows: list[Row] = []
    for spec in specs:
        samplers, wrappers, ltags = resolve_listeners(spec)
        key = uuid.uuid4().hex
        # params are stored when the row ends, after whatever the script logged itself: the
        # script's own values win (finish.store_row_params)
        params = row_params(spec, samplers + [w.name for w in wrappers],
                            command_for(spec.file, spec.args))
        rows.append(Row(spec=spec, key=key, env={}, listeners=samplers, wrappers=wrappers,
                        folder=renv.radtrack_home() / "runs" / key, params=params,
                        record_tags={**row_tags(spec, specs, {}), **ltags}))
    run_dir = renv.radtrack_home() / "runs" / uuid.uuid4().hex
    run_dir.mkdir(parents=True, exist_ok=True)
    # this workload's clients, made anew (StoreHandle.anew: a store file replaced since the
    # last workload is opened as it is now)
    store = store.anew()
    recorder = Recorder(store, specs, rows, say, scratch=run_dir)
    try:
        with WorkloadPlacement(specs, run_dir, log=say) as placement:
            for row in rows:
                row.env = process_env(row, uri, placement.env_for(row.spec))
                row.placement_tags = placement.tags_for(row.spec)
            ended = None if detach is None else functools.partial(detach, recorder=recorder)
            if nodes is not None:  # the other nodes' ends decide the rows' status first
                nodes.rows_made(rows)
                ended = functools.partial(_nodes_ended, nodes, ended)
            spooled = run_workload(rows, interrupt, recorder, grace, wait_listeners=wait_listeners,
                                   on_ended=ended)
            artifacts = placement.artifacts()
    except Exception as exc:  # placement refused, a process not started, or the store failed
        if any(row.status for row in rows):  # the scripts ran and ended: their status stands
            say(f"workload {first.experiment}-{first.workload}: its runs could not be stored: "
                f"{scrub(str(exc))[:200]}")
            for row in rows:
                if row.sink is not None:
                    row.sink.last_error = row.sink.last_error or scrub(str(exc))[:200]
            return leave_for_sync(rows, recorder, uri, rows)  # one line: what to do
        what = "placement failed" if isinstance(exc, PlacementError) else "could not start"
        say(f"workload {first.experiment}-{first.workload}: {what}: {exc}")
        client = recorder.wait()
        if client is None:
            say(f"could not create the runs in the tracking store: {scrub(str(recorder.error))}")
            return [("FAILED", row.run_id, row.name) for row in rows]
        try:
            for row in rows:
                store_row_params(client, row.run_id, row.params, {})
                set_tags(client, row.run_id, {schema.ERROR: str(exc)[:5000]})
                client.set_terminated(row.run_id, "FAILED")
            set_tags(client, recorder.parent_id, {schema.ERROR: str(exc)[:5000]})
            client.set_terminated(recorder.parent_id, "FAILED")
        except Exception as store_exc:  # noqa: BLE001 - the store went away too
            say(f"could not mark the runs FAILED in the tracking store: {scrub(str(store_exc))}")
        return [("FAILED", row.run_id, row.name) for row in rows]
    client, pid = recorder.client, recorder.parent_id
    if client is None or recorder.error is not None or spooled:
        return leave_for_sync(rows, recorder, uri, spooled)
    # the end of the workload rides out a store restart (radtrack/store/outage.py); past
    # $RADTRACK_STORE_WAIT_S, radtrack sync closes the workload run from the rows' spools
    deadline = time.monotonic() + wait_s()
    end = _workload_end(pid, store, rows, artifacts, read_stored)
    try:
        retrying(lambda: _one_transaction(client, lambda: workload_end.store_parent(client, end)), deadline)
        accounts = workload_end.account(client, end)
        workload_end.bind_script_runs(client, end, accounts)
        _end_step_done(rows)  # radtrack sync, if this launcher dies now, only closes the workload
        statuses = [row.status for row in rows]
        parent_status = ("KILLED" if "KILLED" in statuses else
                         "FAILED" if "FAILED" in statuses else "FINISHED")
        retrying(lambda: client.set_terminated(pid, parent_status), deadline)
    except Exception as exc:  # noqa: BLE001 - the store is away: sync closes the workload run
        for row in rows:
            row.sink.last_error = row.sink.last_error or scrub(str(exc))[:200]
        return leave_for_sync(rows, recorder, uri, rows)
    remove_spools(rows)
    for row in rows:
        row.name = _stored_name(client, row)
        say(f"{row.name}: {row.status} (exit {row.exit_code}, run {row.run_id})")
    return [(row.status, row.run_id, row.name) for row in rows]


def _one_transaction(client: MlflowClient, fn: Callable[[], None]) -> None:
    """``fn``'s store calls in one transaction where the store allows (handle.one_transaction)."""
    from radtrack.store.handle import one_transaction

    with one_transaction(client):
        fn()


def _end_step_done(rows: list[Row]) -> None:
    """Each row's finish.json says the workload's end step (accounting, code windows, the
    script's runs) is stored, so that sync never runs it twice (radtrack/storecmds/sync.py)."""
    from radtrack.store import runfiles

    for row in rows:
        if row.sink is not None and (row.sink.dir / runfiles.FINISH_FILE).exists():
            try:
                runfiles.update(row.sink.dir, runfiles.FINISH_FILE, end_step_done=True)
            except OSError:
                pass  # a full disk: at worst sync stores the end step again


def _workload_end(pid: str, store: StoreHandle, rows: list[Row], artifacts: list,
                  read_stored: StoredReader | None) -> WorkloadEnd:
    """The end step's input (radtrack/postrun/workload_end.py), with the reader of the
    workload's stored runs and solo baselines that the entry handed down (it imports MLflow
    and pandas, seconds of CPU, only where a workload of several rows reads them)."""
    return WorkloadEnd(pid, store, list(rows), read_stored, [Path(a) for a in artifacts], say)


def _stored_name(client: MlflowClient, row: Row) -> str:
    """The row run's name as the store has it now (a script may have renamed it through
    RADTBenchmark): the closing line and the sheet say what MLflow and the page say. The
    row's end read it already (its script had ended: finish.store_end); else it is read."""
    if row.stored_name:
        return row.stored_name
    try:
        return client.get_run(row.run_id).info.run_name or row.name
    except Exception:  # noqa: BLE001 - store away: the name radtrack gave it
        return row.name


def _nodes_ended(nodes: NodeHooks, then: Callable[[list[Row]], object] | None,
                 rows: list[Row]) -> object:
    nodes.ended(rows)
    return None if then is None else then(rows)


def process_env(row: Row, uri: str, placement_env: dict[str, str]) -> dict[str, str]:
    """A row's script environment: the placement's and the store's on top of the launcher's."""
    spec = row.spec
    # the sheet's Env may not override what placement needs (CUDA_VISIBLE_DEVICES, MPS pipes)
    e = {**own_threads.user_environ(), **spec.env, **placement_env}
    e.pop(renv.RUN_ID, None)  # RADTBenchmark learns the row run from the row folder
    e.update({
        renv.TRACKING_URI: uri,
        renv.RUN_EVENTS: str(row.folder / "mlflow-runs.jsonl"),
        "PYTHONUNBUFFERED": "1",
    })
    # The script's own MLflow runs are its own (never the row run: docs/mlflow-code.md); by
    # default they land in the row's experiment (radtrack/script/run_events.py).
    e.pop(renv.MLFLOW_RUN_ID, None)
    # NVML (listeners, placement) numbers GPUs in PCI bus order; make CUDA agree, so that
    # device 0 of a row is the GPU its listeners watch.
    e.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    for key, value in ((renv.MAX_EPOCH, spec.max_epoch), (renv.MAX_TIME, spec.max_time)):
        if value is None:
            e.pop(key, None)
        else:
            e[key] = str(value)
    if spec.manual:
        e[renv.MANUAL] = "1"
    else:
        e.pop(renv.MANUAL, None)
    return e
