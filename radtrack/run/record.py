"""The MLflow side of one workload, created alongside its processes, not before them.

The scripts start as soon as their processes can (radtrack/run/start.py); meanwhile this
thread imports MLflow, resolves the experiment, creates the workload's parent run and a run
per row with their tags, hands each id to the row's process (radtrack/script/handshake.py)
and binds each row's sink to its run, which then ships what it has spooled so far.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.script import handshake

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.run.rows import Row
    from radtrack.spec import RunSpec

_HOST: dict[str, str] | None = None


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
    """Creates one workload's runs in a thread of its own; ``wait()`` joins it."""

    def __init__(self, uri: str, specs: list[RunSpec], rows: list[Row], say: Any,
                 scratch: Path | None = None):
        self.uri, self.specs, self.rows, self.say = uri, specs, rows, say
        self.scratch = scratch  # the workload's placement folder (MPS pipes and logs)
        self.client: MlflowClient | None = None
        self.parent_id = ""
        self.error: BaseException | None = None
        self.seconds = 0.0  # how long creating the runs took
        self._thread = threading.Thread(target=self._run, name="radtrack-record", daemon=True)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def wait(self) -> MlflowClient | None:
        """The client once every run exists; None when they could not be created (``error``)."""
        self.start()
        self._thread.join()
        return None if self.error is not None else self.client

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            self._create()
        except BaseException as exc:  # noqa: BLE001 - reported by the launcher after the rows end
            self.error = exc
            for row in self.rows:
                try:
                    handshake.publish(row.folder, **{handshake.ERROR: str(exc)[:500]})
                except OSError:
                    pass
        self.seconds = time.monotonic() - t0

    def _create(self) -> None:
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

        from radtrack.store import schema
        from radtrack.store.tracking import client as make_client
        from radtrack.store.tracking import (
            create_workload_run,
            experiment_id,
            next_workload_number,
            row_run_name,
            set_tags,
            workload_run_name,
            workload_tags,
        )

        self.client = client = make_client(self.uri)
        first = self.specs[0]
        exp_id = experiment_id(client, self.uri, first.experiment)
        for row in self.rows:
            row.exp_id = exp_id
            handshake.publish(row.folder, **{handshake.EXPERIMENT_ID: exp_id})
        if first.workload == 0:  # a CLI launch: the experiment's next workload number
            number = next_workload_number(client, exp_id)
            for row in self.rows:
                row.spec.workload = number
                row.record_tags[schema.WORKLOAD] = str(number)
            self.say(f"workload {first.experiment}-{number}: {len(self.rows)} row(s)")
        host = host_tags(self.say)
        name = workload_run_name(client, exp_id, first)
        # the runs start when their scripts did (released before the runs were made), so
        # readers' "seconds since the run's start" count from the script's start
        starts = [int(row.started * 1000) for row in self.rows if row.started]
        parent = create_workload_run(client, exp_id, first, name, tags=workload_tags(first),
                                     start_time=min(starts) if starts else None)
        self.parent_id = parent.info.run_id
        if self.scratch is not None:
            _link(self.scratch, self.parent_id)
        for row in self.rows:
            row.name = row_run_name(row.spec, parent.info.run_name)
            tags = {MLFLOW_PARENT_RUN_ID: self.parent_id, **host, **row.record_tags}
            run = client.create_run(exp_id, run_name=row.name, tags=tags,
                                    start_time=int(row.started * 1000) if row.started else None)
            row.run_id = run.info.run_id
            handshake.publish(row.folder, **{handshake.RUN_ID: row.run_id})
            _link(row.folder, row.run_id)
            if row.sink is not None:
                row.sink.bind(client, row.run_id, self.uri)
            if row.placement_tags:
                # stored now, not with the row's other tags at its end: a MIG UUID must be
                # on the run even if the launcher dies mid-workload
                set_tags(client, row.run_id, row.placement_tags)


def _link(folder: Path, run_id: str) -> None:
    """``runs/<run id>`` next to the launch-local ``runs/<key>`` folder: users find a run's
    log, environment and MPS logs under its MLflow id (docs/cli.md)."""
    try:
        (folder.parent / run_id).symlink_to(folder.name, target_is_directory=True)
    except OSError:
        pass  # a link there already, or a file system without links: the folder stays by key
