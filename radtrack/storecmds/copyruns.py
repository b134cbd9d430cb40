"""``radtrack copy``: move runs from one MLflow store to another (a laptop's SQLite store to
the team server), whole: experiments by name (their tags), and per run its params, tags,
every point of every metric history, artifacts (traces, logs, environment), start and end
times, status and name. Tags that hold run ids (``schema.RUN_ID_TAGS``: the parent link,
a script run's row run, a row run's script runs) are rewritten to the copies' ids.

Each copy carries ``radtrack.copied_from`` (the source run id) and
``radtrack.copied_from_store``: copying again skips what is there already. A copy is made in
two steps, the run created, filled and linked, then ended with the source's status and end
time; a copy left RUNNING (an earlier copy interrupted) is deleted and made again. A run
still RUNNING in the source is skipped with a line, never copied as if it had ended.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.store.uris import redact
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Experiment, Run

PARENT = "mlflow.parentRunId"
RUN_NAME = "mlflow.runName"
ENDED = ("FINISHED", "FAILED", "KILLED")
MAX_PARAMS = MAX_TAGS = 100  # log_batch takes at most 100 params and 100 tags a call


@dataclass
class Tally:
    copied: int = 0
    there: int = 0
    running: int = 0
    failed: list[str] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="radtrack copy",
        description="Copy experiments and their runs (params, tags, metric histories, "
                    "artifacts, times, statuses, parent and script-run links) from one MLflow "
                    "store to another, e.g. a laptop's sqlite:///mlflow.db to the team server. "
                    "Runs copied before are skipped; runs still RUNNING are skipped.")
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help="experiments to copy, by name or id (default: every experiment with runs)")
    p.add_argument("--from", dest="source", metavar="URI",
                   help="the store to copy from (sqlite:///mlflow.db, http://host:5000, ...)")
    p.add_argument("--to", dest="target", metavar="URI",
                   help="the store to copy into (http://tracker:5000, postgresql+psycopg://...)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be copied, change nothing")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # a mistyped option first, with the close one named
    missing = [o for o, v in (("--from", args.source), ("--to", args.target)) if not v]
    if missing:
        parser.error(f"{' and '.join(missing)} missing: radtrack copy --from SOURCE_URI "
                     "--to TARGET_URI [EXPERIMENT ...]")
    from radtrack.store.mlflow_client import quiet_downloads

    quiet_downloads()  # a line per run instead
    try:
        return copy(args.source, args.target, args.experiments, args.dry_run)
    except RadtrackError as exc:
        print(f"radtrack copy: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("radtrack copy: interrupted; what was copied stays, a copy not yet ended is made "
              "again by the next radtrack copy", file=sys.stderr)
        return 130


def store_identity(uri: str) -> str:
    """What makes two URIs the same store: a local file's resolved path, else the URI
    without its driver, password and trailing slash, its host in lower case."""
    from urllib.parse import urlsplit

    if uri.startswith("sqlite:///"):
        return "sqlite:" + str(Path(uri.removeprefix("sqlite:///")).resolve())
    if uri.startswith("file://") or "://" not in uri:
        return "file:" + str(Path(uri.removeprefix("file://")).resolve())
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0].lower()
    host = (parts.hostname or "").lower() + (f":{parts.port}" if parts.port else "")
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def _open(uri: str, role: str, must_exist: bool) -> MlflowClient:
    """The store's client after radtrack's reachability check (a server or database that
    does not answer: one line); a local source store that does not exist is refused (MLflow
    would make an empty one)."""
    from radtrack.store import tracking

    for prefix in ("sqlite:///", "file://"):
        if must_exist and uri.startswith(prefix) and not Path(uri.removeprefix(prefix)).exists():
            raise RadtrackError(f"--{role} {uri}: no such store ({uri.removeprefix(prefix)} does not exist)")
    try:
        tracking.check_reachable(uri)
    except RadtrackError as exc:
        raise RadtrackError(f"--{role}: {exc}") from None
    from radtrack.store.mlflow_client import mlflow_client

    return mlflow_client(uri)


def copy(source: str, target: str, names: list[str], dry_run: bool = False) -> int:
    if store_identity(source) == store_identity(target):
        raise RadtrackError(f"--from and --to name the same store ({redact(source)})")
    from radtrack.store.uris import store_is_new

    src = _open(source, "from", must_exist=True)
    exps = _experiments(src, source, names)
    new_target = dry_run and store_is_new(target)
    dst = None if new_target else _open(target, "to", must_exist=False)
    if dst is not None and not dry_run:
        from radtrack.store.tracking import check_database_experiments

        check_database_experiments(lambda: dst, target, [e.name for e in exps])
    verb = "would copy" if dry_run else "copying"
    print(f"radtrack copy: {verb} {len(exps)} experiment(s) from {redact(source)} to {redact(target)}")
    tally = Tally()
    pending: list[tuple[Run, str]] = []  # (source run, its copy): linked and ended at the end
    mapping: dict[str, str] = {}  # source run id -> its copy's id
    copies: dict[str, Run] = {}  # copy id -> the copy as found (runs copied before)
    origin: dict[str, str] = {}  # id of every copy found, deleted ones too -> its source id
    with tempfile.TemporaryDirectory(prefix="radtrack-copy-") as tmp:
        for exp in exps:
            runs = _all_runs(src, exp.experiment_id)
            found = _copies(dst, exp.name, dry_run, origin) if dst is not None else {}
            for src_id, run in found.items():
                mapping[src_id] = run.info.run_id
                copies[run.info.run_id] = run
            print(f"{exp.name}: {len(runs)} run(s)")
            exp_id = None
            for run in sorted(runs, key=lambda r: (PARENT in r.data.tags, r.info.start_time or 0)):
                label = f"  {exp.name}/{run.info.run_name or run.info.run_id}"
                if run.info.status not in ENDED:
                    tally.running += 1
                    print(f"{label}: skipped, still {run.info.status} in the source "
                          "(copy it again once it has ended)")
                    continue
                if run.info.run_id in mapping:
                    tally.there += 1
                    print(f"{label}: already copied (run {mapping[run.info.run_id]}), skipped")
                    continue
                if dry_run:
                    tally.copied += 1
                    print(f"{label}: would copy ({run.info.status})")
                    continue
                assert dst is not None
                if exp_id is None:
                    exp_id = _target_experiment(dst, target, exp)
                try:
                    new_id, what = _copy_run(src, source, dst, run, exp_id, Path(tmp))
                except Exception as exc:  # noqa: BLE001 - one run's failure is said, the rest go on
                    tally.failed.append(run.info.run_id)
                    print(f"{label}: NOT copied: {type(exc).__name__}: {str(exc)[:300]}",
                          file=sys.stderr)
                    continue
                mapping[run.info.run_id] = new_id
                pending.append((run, new_id))
                print(f"{label}: copied as {new_id} ({what})", flush=True)
        if dst is not None and not dry_run:
            _link_and_end(dst, pending, copies, mapping, origin, tally)
    done = "would be copied" if dry_run else "copied"
    print(f"radtrack copy: {tally.copied} run(s) {done}, {tally.there} already there, "
          f"{tally.running} still running skipped, {len(tally.failed)} failed")
    return 1 if tally.failed else 0


def _experiments(src: MlflowClient, uri: str, names: list[str]) -> list[Experiment]:
    from radtrack.store.runs import lookup_experiment

    every = [e for e in src.search_experiments() if e.lifecycle_stage == "active"]
    if not names:
        return [e for e in every if src.search_runs([e.experiment_id], max_results=1)]
    out = []
    for name in dict.fromkeys(names):
        exp = lookup_experiment(src, name)
        if exp is None or exp.lifecycle_stage != "active":
            known = [e.name for e in every]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise RadtrackError(f"no experiment {name!r} in {redact(uri)}; {hint}"
                                f"its experiments: {', '.join(known) or 'none'}")
        out.append(exp)
    return out


def _all_runs(c: MlflowClient, exp_id: str) -> list[Run]:
    runs: list[Run] = []
    token = None
    while True:
        page = c.search_runs([exp_id], max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def _copies(dst: MlflowClient, name: str, dry_run: bool, origin: dict[str, str]) -> dict[str, Run]:
    """Source run id -> its copy, in the target's experiment ``name``; a copy an earlier
    ``radtrack copy`` left unfinished (still RUNNING) is deleted, to be made again (left
    alone by a dry run). ``origin`` gets every copy's id -> its source run's id."""
    exp = dst.get_experiment_by_name(name)
    if exp is None or exp.lifecycle_stage != "active":
        return {}
    found: dict[str, Run] = {}
    for run in _all_runs(dst, exp.experiment_id):
        src_id = run.data.tags.get(schema.COPIED_FROM)
        if not src_id:
            continue
        origin[run.info.run_id] = src_id
        if run.info.status == "RUNNING":
            if dry_run:
                continue
            print(f"  {name}/{run.info.run_name}: an unfinished copy of {src_id} "
                  f"(run {run.info.run_id}) deleted, copied again")
            dst.delete_run(run.info.run_id)
            continue
        found.setdefault(src_id, run)
    return found


def _target_experiment(dst: MlflowClient, target: str, exp: Experiment) -> str:
    from radtrack.store.runs import experiment_id

    exp_id = experiment_id(dst, target, exp.name)
    have = dst.get_experiment(exp_id).tags
    for key, value in exp.tags.items():
        if have.get(key) != value:
            dst.set_experiment_tag(exp_id, key, value)
    return exp_id


def _copy_run(src: MlflowClient, source: str, dst: MlflowClient, run: Run, exp_id: str,
              tmp: Path) -> tuple[str, str]:
    """Create ``run``'s copy and fill it (tags but links, params, histories, artifacts);
    it stays RUNNING until :func:`_link_and_end`. A failure deletes the half-made copy."""
    from mlflow.entities import Param, RunTag

    from radtrack.store.sqlwriter import SqlMetricWriter

    # the marks first, in create_run's own call: a copy cut short is always found again
    tags = {schema.COPIED_FROM: run.info.run_id, schema.COPIED_FROM_STORE: redact(source)}
    tags.update((k, v) for k, v in run.data.tags.items()
                if k not in schema.RUN_ID_TAGS and k not in (RUN_NAME, *tags))
    first = dict(list(tags.items())[:MAX_TAGS])
    new = dst.create_run(exp_id, start_time=run.info.start_time, tags=first,
                         run_name=run.info.run_name)
    new_id = new.info.run_id
    try:
        rest = [RunTag(k, v) for k, v in tags.items() if k not in first]
        for i in range(0, len(rest), MAX_TAGS):
            dst.log_batch(new_id, tags=rest[i:i + MAX_TAGS])
        params = [Param(k, v) for k, v in run.data.params.items()]
        for i in range(0, len(params), MAX_PARAMS):
            dst.log_batch(new_id, params=params[i:i + MAX_PARAMS])
        points: list[tuple[str, float, int, int]] = []
        for key in run.data.metrics:
            points += [(m.key, m.value, m.timestamp, m.step)
                       for m in src.get_metric_history(run.info.run_id, key)]
        SqlMetricWriter(dst).log_metrics(new_id, points)  # log_batch in 1000s off SQL stores
        files = _artifacts(src, run.info.run_id, dst, new_id, tmp)
    except BaseException:
        try:
            dst.delete_run(new_id)
        except Exception:  # noqa: BLE001 - left RUNNING: the next copy deletes it
            pass
        raise
    return new_id, (f"{len(params)} params, {len(run.data.metrics)} metrics / {len(points)} points, "
                    f"{files} artifact file(s)")


def _artifacts(src: MlflowClient, run_id: str, dst: MlflowClient, new_id: str, tmp: Path) -> int:
    if not src.list_artifacts(run_id):
        return 0
    try:
        local = Path(src.download_artifacts(run_id, "", str(tmp / run_id)))
        files = sum(1 for f in local.rglob("*") if f.is_file())
        dst.log_artifacts(new_id, str(local))
        return files
    finally:
        shutil.rmtree(tmp / run_id, ignore_errors=True)  # one run's files on disk at a time


def _link_and_end(dst: MlflowClient, pending: list[tuple[Run, str]], copies: dict[str, Run],
                  mapping: dict[str, str], origin: dict[str, str], tally: Tally) -> None:
    """The id-holding tags of every copy rewritten to the copies' ids (those copied before
    too: a run they name may have been copied only now), then this run's copies ended with
    the source's status and end time. An id with no copy is kept as the source had it."""
    from mlflow.entities import RunTag

    def remap(value: str) -> str:
        return ",".join(mapping.get(part, part) for part in value.split(","))

    for run in copies.values():  # copied before: the source's links as its copy holds them
        tags = run.data.tags
        src_links = {k: v for k, v in tags.items() if k in schema.RUN_ID_TAGS}
        wanted = {k: remap(",".join(origin.get(p, p) for p in v.split(",")))
                  for k, v in src_links.items()}
        changed = [RunTag(k, v) for k, v in wanted.items() if tags.get(k) != v]
        if changed:
            dst.log_batch(run.info.run_id, tags=changed)
    for run, new_id in pending:
        links = [RunTag(k, remap(v)) for k, v in run.data.tags.items() if k in schema.RUN_ID_TAGS]
        try:
            if links:
                dst.log_batch(new_id, tags=links)
            dst.set_terminated(new_id, status=run.info.status,
                               end_time=run.info.end_time or run.info.start_time)
            tally.copied += 1
        except Exception as exc:  # noqa: BLE001
            tally.failed.append(run.info.run_id)
            print(f"  {run.info.run_name}: NOT copied (ending its copy {new_id} failed: "
                  f"{type(exc).__name__}: {str(exc)[:300]}); copy again to finish it", file=sys.stderr)
