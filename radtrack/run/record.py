"""The MLflow side of one workload, created alongside its processes, not before them.

The scripts start as soon as their processes can (radtrack/run/start.py); meanwhile this
thread opens the store (radtrack/store/handle.py: without MLflow for SQLite and a tracking
server), resolves the experiment, creates the workload's parent run and a run
per row with their tags, hands each id to the row's process (radtrack/script/handshake.py)
and binds each row's sink to its run, which then ships what it has spooled so far.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.script import handshake

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.run.rows import Row
    from radtrack.spec import RunSpec
    from radtrack.store.handle import StoreHandle

_HOST: dict[str, str] | None = None
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own tag, named here: MLflow is not imported


def host_tags(say: Any) -> dict[str, str]:
    """The host's GPU facts (nvidia-smi), read once per launcher."""
    global _HOST
    if _HOST is None:
        from radtrack.gpus import host_tags as read

        try:
            _HOST = read()
        except Exception as exc:  # a broken nvidia-smi must not stop the run
            say(f"GPU information unavailable: {exc}")
            _HOST = {}
    return _HOST


class Recorder:
    """Creates one workload's runs in a thread of its own, again and again while the store is
    away (a server restarting, a SQLite file locked by another writer); ``wait()`` joins it.

    Before its first try it writes each row's ``create.json`` (radtrack/store/runfiles.py), and
    records there what it created (the experiment, the workload number, the parent), so that
    ``radtrack sync`` creates the rest as this thread would have when the store stays away."""

    def __init__(self, store: StoreHandle, specs: list[RunSpec], rows: list[Row], say: Any,
                 scratch: Path | None = None):
        self.specs, self.rows, self.say = specs, rows, say
        self.scratch = scratch  # the workload's placement folder (MPS pipes and logs)
        # the store's URI and the launcher's client of it, the command's (store/handle.py)
        self.store = store
        self.uri = store.uri
        self.client: MlflowClient | None = None
        self.parent_id = ""
        self.parent_name = ""
        self.exp_id = ""
        self.error: BaseException | None = None
        self.outage = ""  # why the store was away at the last try ("" once the runs exist)
        self.seconds = 0.0  # how long creating the runs took
        self.key = scratch.name if scratch is not None else uuid.uuid4().hex  # the workload's
        self._thread = threading.Thread(target=self._run, name="radtrack-record", daemon=True)
        self._started = False
        self._wake = threading.Event()
        self._give_up_at: float | None = None  # time.monotonic(): stop retrying then
        self.made_at = time.time()  # before any run of this launch went to the background
        # the SQLite store file's (device, inode) when the scripts were released, and why the
        # store no longer holds the runs at the end ("": it does): radtrack/store/newstore.py
        self.store_id: tuple[int, int] | None = None
        self.lost = ""

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def wait(self, deadline: float | None = None) -> MlflowClient | None:
        """The client once every run exists; None when they could not be created (``error``;
        a store still away at ``deadline``, a time.monotonic() value: default now)."""
        self._give_up_at = time.monotonic() if deadline is None else deadline
        self._wake.set()
        self.start()
        self._thread.join()
        return None if self.error is not None else self.client

    def _run(self) -> None:
        from radtrack.store.outage import describe, is_outage, scrub
        from radtrack.store.tracking import away_at_launch

        t0 = time.monotonic()
        try:
            self._write_create_files()
        except OSError as exc:  # a full disk: the runs can still be made now
            self.say(f"could not keep the run records for radtrack sync: {exc}")
        if away_at_launch():  # the scripts need not wait for a first try to fail
            self._publish(**{handshake.AWAY: away_at_launch()})
        delay = 1.0
        while True:
            try:
                self._create()
                self.outage = ""
                break
            except BaseException as exc:  # noqa: BLE001 - reported by the launcher after the rows end
                away = isinstance(exc, Exception) and is_outage(exc)
                if away and not self.outage:
                    self._publish(**{handshake.AWAY: describe(exc)})
                if away and not self.outage and not away_at_launch():  # else said already
                    self.say(f"tracking store {_redact(self.uri)} unreachable ({describe(exc)}): "
                             "the scripts run on and their samples spool; retrying")
                if away:
                    self.outage = describe(exc)
                give_up = self._give_up_at is not None and time.monotonic() + delay > self._give_up_at
                if not away or give_up:
                    self.error = exc
                    self._publish(**{handshake.ERROR: scrub(str(exc))[:500]})
                    break
            self._wake.wait(delay)
            self._wake.clear()
            delay = min(delay * 2, 10.0)
        self.seconds = time.monotonic() - t0
        if self.error is None:  # the end's imports, while the scripts run (radtrack/run/warm.py)
            from radtrack.run.warm import import_end_modules

            import_end_modules()

    def _publish(self, **ids: str) -> None:
        for row in self.rows:
            try:
                handshake.publish(row.folder, **ids)
            except OSError:
                pass

    def _write_create_files(self) -> None:
        """Each row's ``create.json``: everything needed to create its runs later."""
        from radtrack.store import runfiles
        from radtrack.store.tracking import launch_id, without_password, workload_tags

        first = self.specs[0]
        starts = [int(row.started * 1000) for row in self.rows if row.started]
        host = host_tags(self.say)
        for row in self.rows:
            if row.sink is None:
                continue
            runfiles.write(row.sink.dir, runfiles.CREATE_FILE, {
                "tracking_uri": without_password(self.uri), "workload_key": self.key,
                "launch_id": launch_id(), "experiment": first.experiment,
                "workload": first.workload, "letter": row.spec.letter,
                "run_name": row.spec.run_name, "row": row.spec.row,
                "sheet": str(row.spec.sheet) if row.spec.sheet is not None else None,
                "script": str(row.spec.file),
                "parent_tags": workload_tags(first), "parent_start_ms": min(starts, default=None),
                "row_tags": {**host, **row.record_tags, **row.placement_tags},
                "row_start_ms": int(row.started * 1000) if row.started else None,
                "spec": runfiles.spec_record(row.spec),
            })

    def _note(self, **fields: Any) -> None:
        """What is created so far, into each row's ``create.json`` (sync creates only the rest)."""
        from radtrack.store import runfiles

        for row in self.rows:
            if row.sink is not None and (row.sink.dir / runfiles.CREATE_FILE).exists():
                try:
                    runfiles.update(row.sink.dir, runfiles.CREATE_FILE, **fields)
                except OSError:
                    pass

    def _create(self) -> None:
        """Create what does not exist yet (a retry after an outage resumes here)."""
        from radtrack.store.reach import raise_if_away
        from radtrack.store.tracking import (
            create_workload_run,
            experiment_id,
            next_workload_number,
            row_run_name,
            workload_run_name,
            workload_tags,
        )
        from radtrack.vocab import schema

        raise_if_away(self.uri)  # a database that is down: not MLflow's 100-s retries
        if self.client is None:
            _after_finishers(self.made_at)
            # radtrack's light client where the store allows (radtrack/store/handle.py): no
            # MLflow import in the launcher, which cost it about 2 CPU-s over every run
            self.client = self.store.client
        client = self.client
        first = self.specs[0]
        if not self.exp_id:
            self.exp_id = experiment_id(client, self.uri, first.experiment)
            for row in self.rows:
                row.exp_id = self.exp_id
            self._publish(**{handshake.EXPERIMENT_ID: self.exp_id})
        exp_id = self.exp_id
        fresh = False  # the workload's number was just found unused: no other launch has it
        if first.workload == 0:  # a CLI launch: the experiment's next workload number
            number = next_workload_number(client, exp_id)
            fresh = True
            for row in self.rows:
                row.spec.workload = number
                row.record_tags[schema.WORKLOAD] = str(number)
            self._note(workload=number)
            self.say(f"workload {first.experiment}-{number}: {len(self.rows)} row(s)")
        host = host_tags(self.say)
        if not self.parent_id:
            # a number found unused a moment ago needs no second search for other launches
            # of it (one round trip fewer); two launches taking it at once are settled after
            # the creation (identity.create_workload_run)
            name = f"{first.experiment}-{first.workload}" if fresh else workload_run_name(client, exp_id, first)
            # the runs start when their scripts did (released before the runs were made), so
            # readers' "seconds since the run's start" count from the script's start
            starts = [int(row.started * 1000) for row in self.rows if row.started]
            parent = create_workload_run(client, exp_id, first, name, tags=workload_tags(first),
                                         start_time=min(starts) if starts else None)
            self.parent_id, self.parent_name = parent.info.run_id, parent.info.run_name
            self._note(experiment_id=exp_id, parent_id=self.parent_id,
                       parent_name=self.parent_name)
            if self.scratch is not None:
                _link(self.scratch, self.parent_id)
        for row in self.rows:
            if row.run_id:
                continue
            row.name = row_run_name(row.spec, self.parent_name)
            # the placement's tags (a MIG UUID) go in with the run, not in a call after it:
            # on the run even if the launcher dies mid-workload, one round trip fewer
            tags = {PARENT_TAG: self.parent_id, **host, **row.record_tags,
                    **{k: str(v)[:8000] for k, v in row.placement_tags.items()}}
            run = client.create_run(exp_id, run_name=row.name, tags=tags,
                                    start_time=int(row.started * 1000) if row.started else None)
            row.run_id = run.info.run_id
            if row.sink is not None:
                row.sink.bind(client, row.run_id, self.uri)
            _publish_retrying(row.folder, **{handshake.RUN_ID: row.run_id})
            _link(row.folder, row.run_id)


def _after_finishers(made_at: float) -> None:
    """Until no launch of this $RADTRACK_HOME that went to the background before this one
    began (radtrack/run/detach.py) still stores: it may be making a new store's tables
    (MLflow's migrations, which two processes must not run at once) or its workload run,
    whose number a CLI launch must not take again. Later ones are not waited for (they wait
    for this one); the scripts run meanwhile, as while any store is slow."""
    from radtrack.run.background_launchers import wait_for
    from radtrack.script.env import radtrack_home

    wait_for(radtrack_home(), lambda _line: None, before=made_at)


def _publish_retrying(folder: Path, **ids: str) -> None:
    """Hand ``ids`` to the script; on a full disk keep trying in the background (every
    0.5 s, for handshake.WAIT_S) rather than fail the run creation: the script waits for them."""
    try:
        handshake.publish(folder, **ids)
        return
    except OSError:
        pass

    def retry() -> None:
        deadline = time.monotonic() + handshake.WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                handshake.publish(folder, **ids)
                return
            except OSError:
                continue

    threading.Thread(target=retry, name="radtrack-publish", daemon=True).start()


def _redact(uri: str) -> str:
    from radtrack.store.tracking import redact

    return redact(uri)


def _link(folder: Path, run_id: str) -> None:
    """``runs/<run id>`` next to the launch-local ``runs/<key>`` folder: users find a run's
    log, environment and MPS logs under its MLflow id (docs/cli.md)."""
    try:
        (folder.parent / run_id).symlink_to(folder.name, target_is_directory=True)
    except OSError:
        pass  # a link there already, or a file system without links: the folder stays by key
