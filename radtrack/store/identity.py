"""Who launched and which launch: MLflow's user tag, the launch id, and workload run names that
two launches of the same workload number never share."""

from __future__ import annotations

import getpass
import os
import re
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from radtrack.spec import RunSpec
from radtrack.vocab import schema
from radtrack.vocab.schema import ROLE

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

TRACKING_USERNAME = "MLFLOW_TRACKING_USERNAME"  # MLflow's basic-auth user


def launch_user() -> str:
    """Who launches: the tracking server's user (``MLFLOW_TRACKING_USERNAME``, the account
    basic auth knows) when set, else the OS user."""
    user = os.environ.get(TRACKING_USERNAME, "").strip()
    if user:
        return user
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        return str(os.getuid())


LAUNCH_ID_ENV = "RADTRACK_LAUNCH_ID"  # set for SLURM jobs: one submission is one launch
_LAUNCH_ID_RE = re.compile(r"^[0-9a-f]{8}$")
_launch_id: list[str] = []
_acting: list[str] = []  # acting_as's launch ids, innermost last


def launch_id() -> str:
    """This launch's id (8 hex digits): the launch ``radtrack sync`` acts for
    (:func:`acting_as`), else ``RADTRACK_LAUNCH_ID`` when a submitter set it for its jobs,
    else made once per process."""
    for given in (*reversed(_acting), os.environ.get(LAUNCH_ID_ENV, "")):
        given = given.strip().lower()
        if _LAUNCH_ID_RE.match(given):
            return given
    if not _launch_id:
        _launch_id.append(secrets.token_hex(4))
    return _launch_id[0]


@contextmanager
def acting_as(launch: str) -> Iterator[None]:
    """Inside the block, :func:`launch_id` is ``launch`` (a launch's recorded id; "" or not
    an id: unchanged): ``radtrack sync`` creates the runs a launcher could not with that
    launcher's id, so their names and tags are those it would have made. The process's
    environment is left alone (it was once set and restored around the call)."""
    _acting.append(launch)
    try:
        yield
    finally:
        _acting.pop()


def identity_tags() -> dict[str, str]:
    """Who launched and which launch (parent and child): MLflow sets the run's user from
    ``mlflow.user`` (``TrackingServiceClient.create_run``: ``user_id = tags["mlflow.user"]``)."""
    return {schema.MLFLOW_USER: launch_user(), schema.LAUNCH_ID: launch_id()}


def _say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


def _suffixed(name: str) -> str:
    return f"{name} #{launch_id()[:4]}"


def _workload_runs(c: MlflowClient, exp_id: str, workload: int) -> list:
    """Workload (parent) runs of workload number ``workload``, every launch's."""
    query = f"tags.`{ROLE}` = '{schema.ROLE_WORKLOAD}' and tags.`{schema.WORKLOAD}` = '{workload}'"
    return c.search_runs([exp_id], filter_string=query, max_results=1000)


def _other_launches(c: MlflowClient, exp_id: str, workload: int, name: str | None = None) -> list:
    """Workload (parent) runs of workload number ``workload`` (named ``name``, when given)
    made by other launches."""
    return [r for r in _workload_runs(c, exp_id, workload)
            if r.data.tags.get(schema.LAUNCH_ID) != launch_id()
            and (name is None or r.info.run_name == name)]


def own_workload_run(c: MlflowClient, exp_id: str, workload: int):  # noqa: ANN201 - MLflow's Run
    """This launch's workload run of number ``workload`` (the earliest), or None: under
    :func:`acting_as`, one the recorded launcher made before it could note it."""
    mine = [r for r in _workload_runs(c, exp_id, workload)
            if r.data.tags.get(schema.LAUNCH_ID) == launch_id()]
    return min(mine, key=lambda r: r.info.start_time or 0) if mine else None


def _taken_line(spec: RunSpec, runs: list, name: str) -> str:
    by = sorted({f"{r.data.tags.get(schema.MLFLOW_USER) or r.info.user_id or '?'}, launch "
                 f"{r.data.tags.get(schema.LAUNCH_ID) or 'before launch ids'}" for r in runs})
    # one short line (it lands among the workload's own output): the suffix names this launch
    return (f"workload {spec.experiment}-{spec.workload} already exists ({'; '.join(by[:2])}): "
            f"this launch's runs are {name!r}")


def workload_run_name(c: MlflowClient, exp_id: str, spec: RunSpec) -> str:
    """The parent run's name: ``<experiment>-<workload>``, with `` #<launch id[:4]>`` when
    another launch (another person, or the same person again) already has that workload
    number in the experiment; says so when it adds the suffix."""
    name = f"{spec.experiment}-{spec.workload}"
    others = _other_launches(c, exp_id, spec.workload)
    if not others:
        return name
    _say(_taken_line(spec, others, _suffixed(name)))
    return _suffixed(name)


def create_workload_run(c: MlflowClient, exp_id: str, spec: RunSpec, name: str,
                        tags: dict[str, str], start_time: int | None = None) -> Run:
    """Create the parent run named ``name`` with ``tags`` (workload_tags); when another launch
    created a parent of the same name at the same moment (both looked before either
    created), the later one (by start time, then launch id) takes the suffix, so exactly one
    of them keeps the plain name."""
    run = c.create_run(exp_id, run_name=name, tags=tags, start_time=start_time)
    if name.endswith(f" #{launch_id()[:4]}"):
        return run
    mine = (run.info.start_time, launch_id())
    earlier = [r for r in _other_launches(c, exp_id, spec.workload, name)
               if (r.info.start_time, r.data.tags.get(schema.LAUNCH_ID) or "") < mine]
    if not earlier:
        return run
    _say(_taken_line(spec, earlier, _suffixed(name)))
    c.update_run(run.info.run_id, name=_suffixed(name))
    return c.get_run(run.info.run_id)


def row_run_name(spec: RunSpec, parent_name: str) -> str:
    """A row run's name: its RunName or ``<experiment>-<workload> <letter>``, with the
    parent's launch suffix when the parent has one."""
    name = spec.run_name or spec.default_run_name()
    base = f"{spec.experiment}-{spec.workload}"
    return f"{name}{parent_name[len(base):]}" if parent_name.startswith(base + " #") else name


