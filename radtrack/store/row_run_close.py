"""The end of a row run in the store: what the launcher stores when its script ended, and what
``radtrack sync`` stores later from the row's ``finish.json`` when the store was away."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient


def finish_run(client: MlflowClient, run_id: str, folder: Path, params: dict[str, str],
               tags: dict[str, str], status: str, started: float, ended: float,
               metrics: list | None = None) -> str | None:
    """The end of a row run as the launcher (or ``radtrack sync`` from finish.json) stores it;
    ``metrics``: (key, value, timestamp ms, step) points of its own (the spool's drops).
    Returns the run's name as the store held it (its script has ended: a rename through
    RADTBenchmark is in), read with its params; None where they were not read."""
    from radtrack.store.entities import Metric, Param, RunTag
    from radtrack.store.tracking import log_params, set_tags

    released = folder / "released"
    start = started or (float(released.read_text()) if released.exists() else time.time())
    end = ended or time.time()
    run = client.get_run(run_id) if params else None
    new = _new(run.data.params if run is not None else {}, params, tags)
    points = [Metric(schema.DURATION_KEY, end - start, int(end * 1000), 0),
              *(Metric(k, float(v), int(t), int(i)) for k, v, t, i in metrics or ())]
    if len(new) <= BATCH_PARAMS_TAGS and len(tags) <= BATCH_PARAMS_TAGS and \
            len(new) + len(tags) + len(points) <= BATCH_ENTITIES:
        # one call, not three: each is a round trip to a tracking server
        client.log_batch(run_id, metrics=points, params=[Param(k, v) for k, v in new.items()],
                         tags=[RunTag(k, str(v)[:8000]) for k, v in tags.items()])
    else:
        log_params(client, run_id, new)
        set_tags(client, run_id, tags)
        for i in range(0, len(points), BATCH_ENTITIES):
            client.log_batch(run_id, metrics=points[i:i + BATCH_ENTITIES])
    if (folder / schema.LOG_FILE).exists():
        client.log_artifact(run_id, str(folder / schema.LOG_FILE), schema.LOGS_DIR)
    if (folder / schema.ENVIRONMENT_DIR).is_dir():
        client.log_artifacts(run_id, str(folder / schema.ENVIRONMENT_DIR), schema.ENVIRONMENT_DIR)
    profiles = folder / schema.PROFILES_DIR
    if profiles.is_dir() and any(profiles.iterdir()):
        client.log_artifacts(run_id, str(profiles), schema.PROFILES_DIR)
    client.set_terminated(run_id, status, end_time=int(end * 1000))
    return run.info.run_name if run is not None else None


def store_row_params(client: MlflowClient, run_id: str, params: dict[str, str],
                     tags: dict[str, str]) -> None:
    """The params radtrack derives from the command line, stored after the script ran so
    they never collide with what it logged: where the script set a param itself its value
    wins and radtrack's goes to the tag ``radtrack.param.<name>``."""
    from radtrack.store.tracking import log_params

    log_params(client, run_id, new_params(client, run_id, params, tags))


def new_params(client: MlflowClient, run_id: str, params: dict[str, str],
               tags: dict[str, str]) -> dict[str, str]:
    """The params of ``params`` the run does not hold yet; where the script logged one with
    another value, radtrack's goes into ``tags`` as ``radtrack.param.<name>``."""
    if not params:
        return {}
    return _new(client.get_run(run_id).data.params, params, tags)


def _new(have: dict[str, str], params: dict[str, str], tags: dict[str, str]) -> dict[str, str]:
    for key, value in params.items():
        if key in have and have[key] != value:
            tags[schema.PARAM_TAG_PREFIX + key] = value
    return {k: v for k, v in params.items() if k not in have}


# what one log_batch call takes (MLflow's MAX_PARAMS_TAGS_PER_BATCH, MAX_ENTITIES_PER_BATCH)
BATCH_PARAMS_TAGS = 100
BATCH_ENTITIES = 1000
