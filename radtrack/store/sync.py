"""``radtrack sync``: store what a killed launcher left in the spool, exactly once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radtrack.script import env as renv
from radtrack.store.schema import STOPPED_BY, STOPPED_BY_LAUNCHER_LOST
from radtrack.store.spool import META_FILE, SPOOL_DIR, SPOOL_SUFFIX, hold, holder


def sync(root: Path, tracking_uri: str | None = None, log=print) -> tuple[int, int]:
    """Ship every spooled run under ``root``; return (runs stored, runs left)."""
    from radtrack.store.recovery import read_meta
    from radtrack.store.sink import Sink
    from radtrack.store.tracking import client as make_client
    from radtrack.store.tracking import close_orphaned_parent

    stored = left = 0
    for run_dir in sorted(p for p in root.glob("*") if p.is_dir()):
        owner = hold(run_dir)
        if owner is None:  # its launcher is alive and ships it itself
            log(f"{run_dir.name}: skipped, its launcher ({holder(run_dir)}) is still running it")
            continue
        if not (run_dir / META_FILE).exists():
            if any(run_dir.glob(f"*{SPOOL_SUFFIX}")):
                left += 1
                log(f"{run_dir.name}: its run was never created (the launcher stopped before "
                    f"it reached the tracking store); samples kept in {run_dir}")
            owner.close()
            continue
        meta = read_meta(run_dir)
        uri = tracking_uri or meta["tracking_uri"]
        client = make_client(uri)
        sink = Sink.recover(client, run_dir)
        pending = sink.pending_count
        ok = sink.close(retry_for=0)
        run_id = meta["run_id"]
        if ok:
            stored += 1
            log(f"{run_id}: stored {pending} spooled sample(s) and the telemetry artifacts")
            try:
                run = client.get_run(run_id)
                if run.info.status == "RUNNING":  # its launcher died before ending it
                    client.set_tag(run_id, STOPPED_BY, STOPPED_BY_LAUNCHER_LOST)
                    client.set_terminated(run_id, "KILLED")
                    log(f"{run_id}: was still RUNNING; marked KILLED")
                parent = close_orphaned_parent(client, run_id)
                if parent:
                    log(f"{parent}: its workload (parent) run was still RUNNING; marked KILLED")
            except Exception as exc:
                log(f"{run_id}: could not check its status: {exc}")
        else:
            left += 1
            log(f"{run_id}: store {uri} unreachable ({sink.last_error}); spool kept in {run_dir}")
        owner.close()
    return stored, left


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="radtrack sync",
                                description="Store samples left in the spool by a launcher that "
                                            "was killed or lost its tracking store.")
    p.add_argument("--spool", default=None, help="spool folder (default: $RADTRACK_HOME/spool)")
    p.add_argument("--tracking-uri", default=None,
                   help="store to ship to (default: the one recorded with each run)")
    a = p.parse_args(argv)
    root = Path(a.spool) if a.spool else renv.radtrack_home() / SPOOL_DIR
    if not root.is_dir():
        print(f"radtrack sync: nothing to do ({root} does not exist)")
        return 0
    stored, left = sync(root, a.tracking_uri)
    print(f"radtrack sync: {stored} run(s) stored, {left} left in {root}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
