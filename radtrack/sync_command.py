"""``radtrack sync``, the command: finish what launchers left in the spool
(radtrack/storecmds/sync.py does the storing) and run each workload's end step that its
launcher could not (radtrack/postrun/synced.py rebuilds the rows from their spools,
radtrack/postrun/workload_end.py is the step the launcher runs too).

The command joins the two: store/ stores and imports no post-run step; the end step is
given to it (:func:`end_step`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radtrack.script import env as renv
from radtrack.store import runfiles
from radtrack.store.handle import StoreHandle
from radtrack.store.outage import describe
from radtrack.store.spool import SPOOL_DIR
from radtrack.storecmds.sync import sync
from radtrack.storecmds.sync import sync_folders as _sync_folders


def sync_folders(folders: list[Path], store: StoreHandle | None = None,
                 log=print) -> tuple[int, int]:
    """radtrack/storecmds/sync.py ``sync_folders`` with the workload's end step: what ``radtrack
    sync`` does for the spool folders ``folders`` (into ``store``, else the store each run
    recorded); returns (runs stored, runs left)."""
    return _sync_folders(folders, end_step, store, log)


def end_step(parent_id: str, group: list[tuple[Path, str, str]], log) -> bool:
    """The launcher's end-of-workload step for a workload whose every row ``group`` holds
    (spool folder, run id, store), from their spooled samples (radtrack/postrun/synced.py);
    True when done (each ``finish.json`` then says so: never run twice)."""
    from radtrack.analysis.workload_runs import read_workload_runs
    from radtrack.postrun.synced import end_workload
    from radtrack.store.reach import raise_if_away
    from radtrack.store.uris import redact

    uri = group[0][2]
    try:
        raise_if_away(uri)
        # the handle of the store the rows recorded (or sync's --tracking-uri: _uri)
        end_workload(StoreHandle(uri), parent_id, [(f, r) for f, r, _ in group],
                     read_workload_runs, log)
        for folder, _, _ in group:
            runfiles.update(folder, runfiles.FINISH_FILE, end_step_done=True)
    except Exception as exc:  # noqa: BLE001 - the store went away: kept for next time
        log(f"{parent_id}: could not run its workload's end step in {redact(uri)} "
            f"({describe(exc)}); spool kept")
        return False
    return True



def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="radtrack sync",
                                description="Finish what launchers left in the spool: create "
                                            "runs never created, store spooled samples and "
                                            "the scripts' values, end each run as it ended.")
    p.add_argument("--spool", default=None, help="spool folder (default: $RADTRACK_HOME/spool)")
    p.add_argument("--tracking-uri", default=None,
                   help="store to ship to (default: the one recorded with each run)")
    p.add_argument("--repair-store", action="store_true",
                   help="first make the SQLite store (--tracking-uri, else MLFLOW_TRACKING_URI) "
                        "whole at this MLflow's schema, its runs kept: one left half-made by a "
                        "migration cut short, or with an older schema (a copy of it as it was "
                        "is kept beside it)")
    a = p.parse_args(argv)
    if a.repair_store:
        from radtrack.errors import RadtrackError
        from radtrack.store.uris import resolve_uri
        from radtrack.storecmds.storerepair import repair

        try:
            repair(resolve_uri(a.tracking_uri), log=lambda m: print(f"radtrack sync: {m}"))
        except RadtrackError as exc:
            print(f"radtrack sync: {exc}", file=sys.stderr)
            return 2
    if a.tracking_uri:  # answers HTTP but is no MLflow server: one line, before any spool
        from radtrack.store.reach import not_mlflow

        wrong = not_mlflow(a.tracking_uri)
        if wrong:
            print(f"radtrack sync: {wrong}", file=sys.stderr)
            return 2
    root = Path(a.spool) if a.spool else renv.radtrack_home() / SPOOL_DIR
    if not root.is_dir():
        print(f"radtrack sync: nothing to do ({root} does not exist)")
        return 0
    # the one store handle of the command, when it was given one (else each run's own)
    stored, left = sync(root, end_step, StoreHandle(a.tracking_uri) if a.tracking_uri else None)
    print(f"radtrack sync: {stored} run(s) stored, {left} left in {root}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
