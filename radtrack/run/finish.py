"""The end of a row: listeners stopped, output drained, its status decided, everything stored."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from radtrack.run.listen import hello_tags
from radtrack.run.start import say, stop_row_listeners
from radtrack.store import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.run.rows import Row


def decide_status(stopped_by: str, exit_code: int | None) -> str:
    """FINISHED, FAILED or KILLED: the script's exit code decides, unless radtrack stopped it
    (a signal to the launcher: KILLED; its MaxTime: FINISHED)."""
    if stopped_by == "signal":
        return "KILLED"
    if stopped_by == "max_time" or exit_code == 0:
        return "FINISHED"
    if exit_code is not None and exit_code < 0:
        return "KILLED"
    return "FAILED"


def end_row(row: Row) -> None:
    """Stop listeners, drain output, decide the status and the listener tags (no store I/O)."""
    assert row.proc is not None and row.sink is not None
    stop_row_listeners(row)
    for t in row.pumps:
        t.join(timeout=10)
    row.exit_code = row.proc.returncode
    row.status = decide_status(row.stopped_by, row.exit_code)
    for lp in row.lprocs:
        key = schema.listener_tag(lp.name)
        if lp.gave_up:
            continue
        if key not in row.tags:
            row.tags[key] = "ok" if lp.ready.is_set() else f"failed: {lp.failure or 'no output'}"
        row.tags.update(hello_tags(lp.name, row.sink.hello(lp.name)))
    row.tags[schema.EXIT_CODE] = str(row.exit_code)
    if row.stopped_by:
        row.tags[schema.STOPPED_BY] = row.stopped_by


def store_row(client: MlflowClient | None, row: Row, env_threads: list[threading.Thread]) -> None:
    """Ship the rest of the row's samples, its traces and summaries, then its tags, params,
    duration, log, environment, profiles and status. Without a client (the store could not
    be reached to create the run) everything stays on disk and the launcher says where."""
    assert row.sink is not None
    stored = row.sink.close()
    if not stored:
        say(f"{row.spec.letter}: tracking store unreachable ({row.sink.last_error}); samples kept in "
            f"{row.sink.dir}; run `radtrack sync` to store them")
    if client is None or not row.run_id:
        return
    from mlflow.entities import Metric

    from radtrack.store.tracking import set_tags

    released = row.folder / "released"
    start = row.started or (float(released.read_text()) if released.exists() else time.time())
    end = row.ended or time.time()
    try:
        store_row_params(client, row.run_id, row.params, row.tags)
        set_tags(client, row.run_id, row.tags)
        client.log_batch(row.run_id, metrics=[Metric(schema.DURATION_KEY, end - start,
                                                     int(end * 1000), 0)])
        client.log_artifact(row.run_id, str(row.folder / schema.LOG_FILE), schema.LOGS_DIR)
        for t in env_threads:
            t.join(timeout=60)
        if (row.folder / schema.ENVIRONMENT_DIR).is_dir():
            client.log_artifacts(row.run_id, str(row.folder / schema.ENVIRONMENT_DIR),
                                 schema.ENVIRONMENT_DIR)
        profiles = row.folder / schema.PROFILES_DIR
        if profiles.is_dir() and any(profiles.iterdir()):
            client.log_artifacts(row.run_id, str(profiles), schema.PROFILES_DIR)
        client.set_terminated(row.run_id, row.status, end_time=int(end * 1000))
    except Exception as exc:
        say(f"{row.spec.letter}: could not store the end of run {row.run_id}: {exc}")


def store_row_params(client: MlflowClient, run_id: str, params: dict[str, str],
                     tags: dict[str, str]) -> None:
    """The params radtrack derives from the command line, stored after the script ran so
    they never collide with what it logged: where the script set a param itself its value
    wins and radtrack's goes to the tag ``radtrack.param.<name>``."""
    from radtrack.store.tracking import log_params

    if not params:
        return
    have = client.get_run(run_id).data.params
    for key, value in params.items():
        if key in have and have[key] != value:
            tags[schema.PARAM_TAG_PREFIX + key] = value
    log_params(client, run_id, {k: v for k, v in params.items() if k not in have})
