"""MLflow side of a launch: store resolution, up-front checks (reachable, credentials, write
permission), experiments, launch identity (user, launch id, run names), parent/child runs."""

from __future__ import annotations

import getpass
import os
import re
import secrets
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.script import env
from radtrack.spec import RunSpec
from radtrack.store import schema
from radtrack.store.schema import ROLE

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Experiment, Run

TRACKING_USERNAME = "MLFLOW_TRACKING_USERNAME"  # MLflow's basic-auth user


def resolve_uri(cli_uri: str | None = None) -> str:
    """--tracking-uri, else MLFLOW_TRACKING_URI, else sqlite:///mlflow.db (the embedded store)."""
    return cli_uri or os.environ.get(env.TRACKING_URI) or env.DEFAULT_TRACKING_URI


def check_reachable(uri: str, timeout: float = 5.0) -> None:
    """Fail fast (exit 2) on a tracking server that does not answer, before anything starts."""
    if not uri.startswith(("http://", "https://")):
        if uri.startswith("sqlite:///"):
            folder = Path(uri.removeprefix("sqlite:///")).absolute().parent
            if not folder.is_dir():
                raise RadtrackError(f"tracking store {uri}: folder {folder} does not exist")
        return
    try:
        urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout).close()
    except urllib.error.HTTPError:
        pass  # it answered (a proxy in front): reachable; credentials are checked below
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RadtrackError(f"tracking server {uri} is unreachable: {reason}") from None
    check_credentials(uri)


def check_credentials(uri: str) -> None:
    """One authenticated read (MLflow's own client, so its auth settings apply): a server
    behind basic auth that refuses us is one message naming the variables to set."""
    from mlflow.exceptions import MlflowException

    try:
        client(uri).search_experiments(max_results=1)
    except MlflowException as exc:
        code = str(getattr(exc, "error_code", ""))
        text = str(exc)
        if "UNAUTHENTICATED" in code or "401" in text:
            user = os.environ.get(TRACKING_USERNAME)
            who = f"user {user!r} was refused" if user else "no credentials were given"
            raise RadtrackError(
                f"tracking server {uri} requires authentication and {who}: set "
                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN)"
            ) from None
        if "PERMISSION_DENIED" in code or "403" in text:
            raise RadtrackError(f"tracking server {uri} refused user "
                                f"{os.environ.get('MLFLOW_TRACKING_USERNAME')!r}: {text[:200]}") from None
        # anything else (an old server without this endpoint, ...) shows up where it matters


def client(uri: str) -> MlflowClient:
    # Keep MLflow's own HTTP retries short: the sink retries on its own schedule and keeps
    # everything spooled meanwhile, so a long blocking retry inside MLflow gains nothing.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    from mlflow import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    # MLflow prints "View run ... / View experiment ..." on every set_terminated against a
    # server: a launch of many rows would print them per run. Not in this process (the
    # scripts' own runs keep MLflow's behaviour: no environment variable is set for them).
    inner = getattr(c, "_tracking_client", None)
    if inner is not None and hasattr(inner, "_log_url"):
        inner._log_url = lambda run_id: None
    return c


def default_artifact_location(uri: str) -> str | None:
    """Local SQLite stores keep artifacts in ./mlartifacts next to the database."""
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).absolute().parent / "mlartifacts").as_uri()
    return None


DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")  # MLflow SQL stores other than SQLite


def redact(uri: str) -> str:
    """``uri`` with any password replaced, for messages."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.password:
        return uri.replace(f":{parts.password}@", ":***@", 1)
    return uri


def without_password(uri: str) -> str:
    """``uri`` with its password left out (``postgresql://u@h/db``): what radtrack writes into
    files (SLURM job scripts, the job ledger); :func:`with_password` puts it back."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}@{host}"))


def with_password(uri: str) -> str:
    """A password-less ``uri`` (from a job script or ledger) with the password the environment
    holds: ``MLFLOW_TRACKING_URI`` when it names the same store (SLURM propagates the
    submitter's environment to its jobs). Otherwise ``uri`` as is: PostgreSQL then takes the
    password from ``PGPASSWORD`` or the 0600 file ``~/.pgpass`` / ``PGPASSFILE``."""
    full = os.environ.get(env.TRACKING_URI, "")
    if full and full != uri and without_password(full) == uri:
        return full
    return uri


def check_database_experiments(c: MlflowClient, uri: str, experiments: list[str]) -> None:
    """With a database tracking URI (no server in between), a run's artifacts go where its
    experiment says. Refuse, before anything starts, an experiment that does not exist yet
    (MLflow would keep its artifacts in ./mlruns on this host, out of the team's sight) or
    whose artifacts only a tracking server can reach (``mlflow-artifacts:``)."""
    if uri.split(":", 1)[0].split("+", 1)[0] not in DATABASE_SCHEMES:
        return
    for name in dict.fromkeys(experiments):
        exp = lookup_experiment(c, name)
        if exp is None:
            raise RadtrackError(
                f"experiment {name!r} does not exist in {redact(uri)}: with a database tracking URI "
                "radtrack does not create experiments (their artifacts would stay in ./mlruns on "
                "this host); create it once with an artifact location on a shared path "
                "(docs/deployment.md), or track through the team's mlflow server (http://...)")
        if exp.artifact_location.startswith("mlflow-artifacts:"):
            raise RadtrackError(
                f"experiment {name!r} keeps its artifacts behind the tracking server "
                f"({exp.artifact_location}), which a database tracking URI cannot reach: track "
                "through the server (http://...) or use an experiment on a shared path")


def check_experiments(c: MlflowClient, uri: str, experiments: list[str]) -> None:
    """Before anything starts: a database store's experiments (check_database_experiments)
    and, on a server with basic auth, the user's permission to write to each experiment
    (radtrack/store/permissions.py)."""
    from radtrack.store import permissions

    check_database_experiments(c, uri, experiments)
    if permissions.applies(uri):
        found = {name: lookup_experiment(c, name) for name in dict.fromkeys(experiments)}
        permissions.check_write_access(uri, redact(uri), {
            name: exp.experiment_id for name, exp in found.items() if exp is not None})


def lookup_experiment(c: MlflowClient, name_or_id: str) -> Experiment | None:
    """The experiment named ``name_or_id``, else numbered so; None when neither exists."""
    exp = c.get_experiment_by_name(name_or_id)
    if exp is None and name_or_id.isdigit():
        from mlflow.exceptions import MlflowException

        try:
            exp = c.get_experiment(name_or_id)
        except MlflowException:
            exp = None
    return exp


def experiment_id(c: MlflowClient, uri: str, name_or_id: str) -> str:
    """The id of the experiment named (or numbered) ``name_or_id``, created when missing."""
    exp = lookup_experiment(c, name_or_id)
    if exp is not None:
        if exp.lifecycle_stage == "deleted":
            raise RadtrackError(f"experiment {name_or_id!r} is deleted; restore it or pick another name")
        return exp.experiment_id
    from mlflow.exceptions import MlflowException

    try:
        return c.create_experiment(name_or_id, artifact_location=default_artifact_location(uri))
    except MlflowException:
        # another launcher (a SLURM job of the same sheet starting at the same moment)
        # created it between the lookup and here: use theirs
        exp = lookup_experiment(c, name_or_id)
        if exp is None:
            raise
        return exp.experiment_id


def next_workload_number(c: MlflowClient, exp_id: str) -> int:
    """One more than the highest workload number used in the experiment (1 when none)."""
    runs = c.search_runs([exp_id], filter_string=f"tags.`{ROLE}` = '{schema.ROLE_WORKLOAD}'",
                         max_results=5000)
    numbers = [int(r.data.tags.get(schema.WORKLOAD, "0") or 0) for r in runs
               if (r.data.tags.get(schema.WORKLOAD) or "").isdigit()]
    return max(numbers, default=0) + 1


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


def launch_id() -> str:
    """This launch's id (8 hex digits): ``RADTRACK_LAUNCH_ID`` when a submitter set it for its
    jobs, else made once per process."""
    given = os.environ.get(LAUNCH_ID_ENV, "").strip().lower()
    if _LAUNCH_ID_RE.match(given):
        return given
    if not _launch_id:
        _launch_id.append(secrets.token_hex(4))
    return _launch_id[0]


def identity_tags() -> dict[str, str]:
    """Who launched and which launch (parent and child): MLflow sets the run's user from
    ``mlflow.user`` (``TrackingServiceClient.create_run``: ``user_id = tags["mlflow.user"]``)."""
    return {schema.MLFLOW_USER: launch_user(), schema.LAUNCH_ID: launch_id()}


def _say(text: str) -> None:
    print(f"[radtrack] {text}", file=sys.stderr, flush=True)


def _suffixed(name: str) -> str:
    return f"{name} #{launch_id()[:4]}"


def _other_launches(c: MlflowClient, exp_id: str, workload: int, name: str | None = None) -> list:
    """Workload (parent) runs of workload number ``workload`` (named ``name``, when given)
    made by other launches."""
    query = f"tags.`{ROLE}` = '{schema.ROLE_WORKLOAD}' and tags.`{schema.WORKLOAD}` = '{workload}'"
    runs = c.search_runs([exp_id], filter_string=query, max_results=1000)
    return [r for r in runs if r.data.tags.get(schema.LAUNCH_ID) != launch_id()
            and (name is None or r.info.run_name == name)]


def _taken_line(spec: RunSpec, runs: list, name: str) -> str:
    by = sorted({f"{r.data.tags.get(schema.MLFLOW_USER) or r.info.user_id or '?'}, launch "
                 f"{r.data.tags.get(schema.LAUNCH_ID) or 'before launch ids'}" for r in runs})
    return (f"workload {spec.experiment}-{spec.workload} already exists in experiment "
            f"{spec.experiment!r} from another launch ({'; '.join(by[:3])}): this launch's "
            f"runs are named {name!r} (tag {schema.LAUNCH_ID}={launch_id()})")


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


def workload_tags(spec: RunSpec) -> dict[str, str]:
    from radtrack import __version__

    tags = {ROLE: schema.ROLE_WORKLOAD, schema.EXPERIMENT: spec.experiment,
            schema.WORKLOAD: str(spec.workload), schema.VERSION: __version__,
            schema.HOSTNAME: socket.gethostname()}
    if spec.sheet is not None:
        tags[schema.SHEET] = str(spec.sheet)
    return {**tags, **identity_tags(), **slurm_tags()}


def slurm_tags() -> dict[str, str]:
    """``radtrack.slurm.job_id`` when this launcher runs inside a SLURM job (any executor)."""
    job = os.environ.get("SLURM_JOB_ID", "")
    return {schema.SLURM_JOB_ID: job} if job else {}


def row_tags(spec: RunSpec, siblings: list[RunSpec], host: dict[str, str]) -> dict[str, str]:
    from radtrack import __version__

    tags = {
        ROLE: schema.ROLE_ROW,
        schema.EXPERIMENT: spec.experiment,
        schema.WORKLOAD: str(spec.workload),
        schema.LETTER: spec.letter,
        schema.DEVICES: "+".join(spec.devices) or "-",
        schema.COLLOCATION: spec.collocation or "-",
        schema.VERSION: __version__,
        schema.HOSTNAME: socket.gethostname(),
        **host,
    }
    others = [s.run_name or s.default_run_name() for s in siblings if s is not spec]
    if others:
        tags[schema.COLOCATED_WITH] = ",".join(others)
    if spec.row is not None:
        tags[schema.ROW] = str(spec.row)
    if spec.sheet is not None:
        tags[schema.SHEET] = str(spec.sheet)
    # GPU settings the row ran under (studies group runs by them: radtrack.analysis.studies)
    if spec.clocks:
        tags[schema.CLOCKS] = spec.clocks
    if spec.power_limit is not None:
        tags[schema.POWER_LIMIT] = f"{spec.power_limit:g}"
    return {**tags, **identity_tags(), **slurm_tags()}


def row_params(spec: RunSpec, listeners: list[str], command: list[str]) -> dict[str, str]:
    import shlex

    from radtrack.script.params import MAX_PARAM_LEN, parse_script_args

    params = parse_script_args(spec.args)
    params.update({
        "script": str(spec.file),
        "command": shlex.join(command)[:MAX_PARAM_LEN],
        "devices": "+".join(spec.devices) or "-",
        "collocation": spec.collocation or "-",
        "listeners": "+".join(listeners) or "none",
        "interval": str(spec.interval),
        "max_epoch": "" if spec.max_epoch is None else str(spec.max_epoch),
        "max_time": "" if spec.max_time is None else str(spec.max_time),
        "manual": str(spec.manual).lower(),
    })
    return {k: v for k, v in params.items() if v != ""}


def log_params(c: MlflowClient, run_id: str, params: dict[str, str]) -> None:
    from mlflow.entities import Param

    items = [Param(k, v) for k, v in params.items()]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, params=items[i:i + 100])


def set_tags(c: MlflowClient, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    items = [RunTag(k, str(v)[:8000]) for k, v in tags.items()]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, tags=items[i:i + 100])


def close_orphaned_parent(c: MlflowClient, row_run_id: str, status: str = "KILLED") -> str | None:
    """Close the workload (parent) run of ``row_run_id`` when it is still RUNNING but none of
    its rows is: its launcher died before ending it. Returns the parent's id when closed."""
    parent_id = c.get_run(row_run_id).data.tags.get("mlflow.parentRunId")
    if not parent_id:
        return None
    parent = c.get_run(parent_id)
    if parent.info.status != "RUNNING":
        return None
    rows = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.`mlflow.parentRunId` = '{parent_id}'",
                         max_results=5000)
    if any(r.info.status == "RUNNING" for r in rows):
        return None  # a row still runs (or waits for its own sync): close it with that row
    c.set_tag(parent_id, schema.STOPPED_BY, schema.STOPPED_BY_LAUNCHER_LOST)
    c.set_terminated(parent_id, status)
    return parent_id


def needs_store_checks(uri: str) -> bool:
    """Whether :func:`check_experiments` has anything to check before the launch: a
    tracking server (permissions) or a database store (experiments' artifact locations);
    a SQLite or file store has nothing to check, so MLflow need not be imported first."""
    return uri.startswith(("http://", "https://")) or (
        uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES)


def store_is_new(uri: str) -> bool:
    """A SQLite store whose file does not exist yet: its tables are made before any script
    starts, since a script that logs to MLflow itself would otherwise create them at the
    same moment as the launcher ("table ... already exists")."""
    if not uri.startswith("sqlite:///"):
        return False
    return not Path(uri.removeprefix("sqlite:///")).exists()
