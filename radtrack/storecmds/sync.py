"""``radtrack sync``: finish what a launcher left in the spool, exactly once.

A row's spool folder (radtrack/store/spool.py) is left behind when its launcher was killed,
or when the tracking store was away (down, restarting, locked) past the launcher's wait.
Sync then does the launcher's remaining work from what the folder holds
(radtrack/store/runfiles.py): creates the runs that were never created (``create.json``,
radtrack/storecmds/syncruns.py), stores the spooled samples and the script's RADTBenchmark
values, ends the run as it ended (``finish.json``: status, exit code, tags, params, output
log, environment capture) or, without it, marks it KILLED (``launcher_lost``), runs the
launcher's end-of-workload step it could not (accounting, code windows, the script's runs:
the ``end_step`` its caller gives, radtrack/sync_command.py: this module imports no
post-run step) once every row of the workload is stored, and closes the
workload run once none of its rows runs. A folder whose launcher is alive is skipped. The
earlier runs of a sheet that a launch could not look up (radtrack/store/unchecked.py) are
looked up then: one still RUNNING is marked KILLED.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from radtrack.script import env as renv
from radtrack.store import runfiles
from radtrack.store.outage import describe
from radtrack.store.spool import META_FILE, SPOOL_SUFFIX, hold, holder
from radtrack.vocab.schema import STOPPED_BY, STOPPED_BY_LAUNCHER_LOST

if TYPE_CHECKING:
    from radtrack.store.handle import StoreHandle

#: (workload run id, its rows as (spool folder, run id, store), log) -> True once the
#: workload's end step is stored (radtrack/sync_command.py end_step)
EndStep = Callable[[str, list[tuple[Path, str, str]], Any], bool]


def sync(root: Path, end_step: EndStep, store: StoreHandle | None = None,
         log=print) -> tuple[int, int]:
    """Finish every spooled run under ``root``, then look up the sheet runs a launch could
    not (radtrack/store/unchecked.py); return (runs stored, runs and lookups left)."""
    from radtrack.store.unchecked import settle

    stored, left = sync_folders(sorted(p for p in root.glob("*") if p.is_dir()), end_step,
                                store, log)
    return stored, left + settle(root, store.uri if store else None, log)


def sync_folders(folders: list[Path], end_step: EndStep, store: StoreHandle | None = None,
                 log=print) -> tuple[int, int]:
    """Finish the spooled runs of ``folders`` (spool folders), running ``end_step`` for each
    workload whose every row is stored; return (runs stored, runs left). ``store``: the one
    the command was given (``--tracking-uri``), else None: the one each run recorded."""
    from radtrack.store.recovery import read_meta
    from radtrack.store.uris import redact
    from radtrack.storecmds.syncruns import create_runs

    tracking_uri = store.uri if store else None
    stored = left = 0
    held: list[tuple[Path, IO[str]]] = []
    uncreated: dict[str, list[Path]] = {}  # workload key -> its rows' folders
    for run_dir in folders:
        owner = hold(run_dir)
        if owner is None:  # its launcher is alive and ships it itself
            log(f"{run_dir.name}: skipped, its launcher ({holder(run_dir)}) is still running it")
            continue
        held.append((run_dir, owner))
        run_id = _run_id(run_dir)
        if run_id and not _lost(run_dir, run_id, tracking_uri, log):
            continue
        create = runfiles.read(run_dir, runfiles.CREATE_FILE)
        if create is None:
            if any(run_dir.glob(f"*{SPOOL_SUFFIX}")):
                left += 1
                log(f"{run_dir.name}: its run was never created (the launcher stopped before "
                    f"it reached the tracking store); samples kept in {run_dir}")
            continue
        uncreated.setdefault(str(create.get("workload_key") or run_dir.name), []).append(run_dir)
    try:
        for group in uncreated.values():
            try:
                for line in create_runs(group, store):
                    log(line)
            except Exception as exc:  # noqa: BLE001 - the store is away or refuses: kept
                left += len(group)
                uri = tracking_uri or (runfiles.read(group[0], runfiles.CREATE_FILE) or {}).get(
                    "tracking_uri", "")
                log(f"{', '.join(f.name for f in group)}: could not create the run(s) in "
                    f"{redact(uri)} ({_why(exc)}); spool kept")
        ends: dict[str, list[tuple[Path, str, str]]] = {}  # workload run -> its rows awaiting its end step
        waiting: set[str] = set()  # workload runs a row of which could not be stored
        for run_dir, _ in held:
            run_id = _run_id(run_dir)
            if not run_id:
                continue
            meta = read_meta(run_dir) if (run_dir / META_FILE).exists() else {}
            uri = _uri(run_dir, tracking_uri, meta)
            parent = _awaits_end(run_dir)
            if not store_folder(run_dir, run_id, uri, log):
                left += 1
                waiting.add(parent)
            elif parent:
                ends.setdefault(parent, []).append((run_dir, run_id, uri))
            elif close_folder(run_dir, run_id, uri, log):
                stored += 1
            else:
                left += 1
        for parent, group in ends.items():
            if parent in waiting:
                left += len(group)
                log(f"{parent}: its workload's end step waits until every row of it is stored; "
                    f"spool kept in {', '.join(str(f) for f, _, _ in group)}")
                continue
            done = end_step(parent, group, log) and all(
                close_folder(f, r, uri, log) for f, r, uri in group)
            stored, left = (stored + len(group), left) if done else (stored, left + len(group))
    finally:
        for _, owner in held:
            owner.close()
    return stored, left


def _why(exc: BaseException) -> str:
    """One line for a failure: radtrack's own refusals whole (they name the command that
    fixes the store), anything else as outage.describe words it."""
    from radtrack.errors import RadtrackError

    return str(exc) if isinstance(exc, RadtrackError) else describe(exc)


def _lost(run_dir: Path, run_id: str, tracking_uri: str | None, log) -> bool:
    """Whether the store no longer holds the folder's run (its SQLite file was deleted or
    replaced after the run was made): then the folder is set back to a run never created,
    every sample and script value pending again, so that it is re-created (in the store now
    there) from ``create.json`` and ended from ``finish.json``, with its true times, status,
    tags, params and metrics. A store that cannot answer now is not judged (False)."""
    from mlflow.exceptions import MlflowException

    from radtrack.script.records import SHIPPED, folder_in
    from radtrack.store.mlflow_client import mlflow_client as make_client
    from radtrack.store.recovery import read_meta
    from radtrack.store.spool import SHIPPED_SUFFIX
    from radtrack.store.uris import redact

    create = runfiles.read(run_dir, runfiles.CREATE_FILE)
    if create is None:
        return False
    try:
        meta = read_meta(run_dir) if (run_dir / META_FILE).exists() else {}
    except (OSError, ValueError):
        meta = {}
    uri = _uri(run_dir, tracking_uri, meta)
    try:
        make_client(uri).get_run(run_id)
        return False
    except MlflowException as exc:
        if str(getattr(exc, "error_code", "")) != "RESOURCE_DOES_NOT_EXIST":
            return False
    except Exception:  # noqa: BLE001 - away or refused: said where the folder is stored
        return False
    for key in ("experiment_id", "parent_id", "parent_name"):
        create.pop(key, None)
    runfiles.write(run_dir, runfiles.CREATE_FILE, create)
    finish = runfiles.read(run_dir, runfiles.FINISH_FILE)
    if finish is not None:
        for key in ("run_id", "parent_id", "stored", "end_step_done"):
            finish.pop(key, None)
        runfiles.write(run_dir, runfiles.FINISH_FILE, finish)
    (run_dir / META_FILE).unlink(missing_ok=True)
    for marker in [*run_dir.glob(f"*{SHIPPED_SUFFIX}"), folder_in(run_dir) / SHIPPED]:
        marker.unlink(missing_ok=True)
    log(f"{run_id}: not in {redact(uri)} (its store was deleted or replaced after the run was "
        "made); re-creating it there from the spool")
    return True


def _run_id(run_dir: Path) -> str:
    """The folder's run, when it exists: meta.json, else finish.json (a full disk kept the
    launcher from writing meta.json)."""
    if (run_dir / META_FILE).exists():
        from radtrack.store.recovery import read_meta

        try:
            return str(read_meta(run_dir).get("run_id") or "")
        except (OSError, ValueError):
            pass
    return str((runfiles.read(run_dir, runfiles.FINISH_FILE) or {}).get("run_id") or "")


def _uri(run_dir: Path, given: str | None, meta: dict[str, Any]) -> str:
    """The store to ship to: ``--tracking-uri``, else the folder's, with the password the
    environment holds (never written into the spool)."""
    from radtrack.store.uris import with_password

    if given:
        return given
    recorded = meta.get("tracking_uri") or (runfiles.read(run_dir, runfiles.CREATE_FILE) or {}).get(
        "tracking_uri") or renv.DEFAULT_TRACKING_URI
    return with_password(recorded)


def _awaits_end(run_dir: Path) -> str:
    """The workload run whose end step (accounting, code windows, the script's runs) the
    launcher left to sync (its store was away at the workload's end: ``finish.json`` has
    the workload's status); "" when none is left."""
    finish = runfiles.read(run_dir, runfiles.FINISH_FILE) or {}
    if not finish.get("parent_status") or finish.get("end_step_done"):
        return ""
    create = runfiles.read(run_dir, runfiles.CREATE_FILE) or {}
    return str(create.get("parent_id") or finish.get("parent_id") or "")


def store_folder(run_dir: Path, run_id: str, uri: str, log) -> bool:
    """Store the folder's samples and script values and end its run as it ended; True when
    done (``finish.json`` then says so: a later sync does not store it again)."""
    from radtrack.store.mlflow_client import mlflow_client as make_client
    from radtrack.store.reach import raise_if_away
    from radtrack.store.row_run_close import finish_run
    from radtrack.store.sink import Sink
    from radtrack.store.uris import redact

    finish = runfiles.read(run_dir, runfiles.FINISH_FILE)
    if (finish or {}).get("stored"):
        return True
    try:
        raise_if_away(uri)  # a database that is down: said now, not after MLflow's retries
        client = make_client(uri)
        sink = Sink.recover(client, run_dir, run_id)
        pending = sink.pending_count
        if not sink.close(retry_for=0, remove=False):
            log(f"{run_id}: store {redact(uri)} unreachable ({sink.last_error}); spool kept "
                f"in {run_dir}")
            return False
        for what in sink.refused:
            log(f"{run_id}: MLflow refused a value the script logged: {what}")
        what = f"stored {pending} spooled sample(s) and the telemetry artifacts"
        if finish is not None:
            end_ms = int(float(finish.get("end") or 0) * 1000)
            cost = [(k, v, end_ms, 0) for k, v in (finish.get("monitoring") or {}).items()]
            finish_run(client, run_id, Path(finish.get("folder", run_dir)),
                       finish.get("params") or {}, finish.get("tags") or {},
                       finish["status"], float(finish.get("start") or 0),
                       float(finish.get("end") or 0), [*(finish.get("metrics") or []), *cost])
            log(f"{run_id}: {what}; ended {finish['status']} (exit "
                f"{finish.get('exit_code')}) with its output log and environment")
            _write_sheet(run_dir, run_id, finish, client, log)
            runfiles.update(run_dir, runfiles.FINISH_FILE, stored=True)
        else:
            log(f"{run_id}: {what}")
            run = client.get_run(run_id)
            if run.info.status == "RUNNING":  # its launcher died before ending it
                client.set_tag(run_id, STOPPED_BY, STOPPED_BY_LAUNCHER_LOST)
                client.set_terminated(run_id, "KILLED")
                log(f"{run_id}: was still RUNNING; marked KILLED")
    except Exception as exc:  # noqa: BLE001 - the store went away or refused: kept for next time
        log(f"{run_id}: could not finish it in {redact(uri)} ({_why(exc)}); spool kept in "
            f"{run_dir}")
        return False
    return True


def close_folder(run_dir: Path, run_id: str, uri: str, log) -> bool:
    """Close the run's workload run once none of its rows runs, with the status its launcher
    decided (KILLED when it was lost); the folder goes. False (kept) when the store is away."""
    import shutil

    from radtrack.store.mlflow_client import mlflow_client as make_client
    from radtrack.store.tracking import close_orphaned_parent
    from radtrack.store.uris import redact

    status = (runfiles.read(run_dir, runfiles.FINISH_FILE) or {}).get("parent_status")
    try:
        parent = close_orphaned_parent(make_client(uri), run_id, status or "KILLED", lost=not status)
        if parent:
            log(f"{parent}: its workload (parent) run was still RUNNING; marked "
                f"{status or 'KILLED'}")
    except Exception as exc:  # noqa: BLE001 - the store went away or refused: kept for next time
        log(f"{run_id}: could not close its workload run in {redact(uri)} ({describe(exc)}); "
            f"spool kept in {run_dir}")
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True


def _write_sheet(run_dir: Path, run_id: str, finish: dict[str, Any], client, log) -> None:
    """A sheet row whose run only sync created gets its Run cell (and its Status cell the
    stored run name), as the launcher writes it; skipped, with a line, while a launcher runs
    the sheet."""
    from radtrack.errors import RadtrackError

    create = runfiles.read(run_dir, runfiles.CREATE_FILE) or {}
    if not create.get("sheet") or not create.get("row") or finish.get("run_id"):
        return  # a CLI launch, or the launcher wrote the run id itself
    sheet = Path(create["sheet"])
    if not sheet.is_file():
        return
    from radtrack.sheet import write_status
    from radtrack.sheet.lock import sheet_lock

    try:
        name = client.get_run(run_id).info.run_name
        spec = create.get("spec") or {}
        # found again by what it said when it was read, wherever edits moved it (a spool
        # from before row_key was kept: by its line)
        identity = ((str(spec["row_key"]), str(spec.get("run_id") or ""))
                    if spec.get("row_key") else None)
        with sheet_lock(sheet):
            found = write_status(sheet, int(create["row"]), finish["status"], run_id,
                                 run_name=name, identity=identity)
        if not found:
            log(f"{sheet}:{create['row']}: row {name} (line {create['row']} when the launch read "
                f"the sheet) is no longer in the sheet: its Run {run_id} was not written; its "
                "run is in the store")
            return
        log(f"{sheet}:{create['row']}: Run {run_id}")
    except (RadtrackError, OSError) as exc:
        log(f"{sheet}:{create['row']}: not updated ({str(exc).splitlines()[0][:200]}); its run is {run_id}")
