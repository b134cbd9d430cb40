"""A sheet's earlier runs that a launch could not look up (its store was away), for ``radtrack sync``.

Before a sheet launches, the launcher looks up the runs its Status/Run cells name: a run a
crashed launcher left RUNNING in MLflow is marked KILLED, and its workload run closed
(radtrack/resume.py). With the store away (down, or a SQLite file locked) that waits: the
launch goes on, and the run ids go to ``unchecked.json`` in the spool folder
(``$RADTRACK_HOME/spool``, next to the rows' spool folders, which sync also stores).
``radtrack sync`` then does the same there once the store is back: a run still RUNNING
becomes KILLED (``radtrack.stopped_by=launcher_lost``), its workload run is closed when none
of its rows runs, and the entry goes. The file holds no password (the URI without it).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

from radtrack.atomic import write_atomic
from radtrack.vocab import schema

FILE = "unchecked.json"


def _edit(root: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    """Rewrite ``root/unchecked.json`` with ``change(entries)`` under an exclusive lock."""
    root.mkdir(parents=True, exist_ok=True)
    lock = os.open(root, os.O_RDONLY)  # the spool folder itself: no lock file left behind
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = root / FILE
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError):
            entries = []
        entries = change(entries)
        if entries:
            write_atomic(path, json.dumps(entries, indent=1))
        else:
            path.unlink(missing_ok=True)
    finally:
        os.close(lock)


def remember(root: Path, uri: str, run_ids: list[str]) -> None:
    """Keep ``run_ids`` (runs of the store at ``uri`` not looked up) for ``radtrack sync``."""
    from radtrack.store.uris import without_password

    if run_ids:
        entry = {"tracking_uri": without_password(uri), "runs": list(dict.fromkeys(run_ids))}
        _edit(root, lambda entries: [*entries, entry])


def settle(root: Path, tracking_uri: str | None, log: Callable[[str], None]) -> int:
    """Look up the runs kept in ``root/unchecked.json`` (in ``tracking_uri``, else each entry's
    store): mark those still RUNNING KILLED, close their workload runs; return how many
    entries are left (the store still away)."""
    from mlflow.exceptions import MlflowException

    from radtrack.store.mlflow_client import mlflow_client as make_client
    from radtrack.store.outage import describe
    from radtrack.store.reach import raise_if_away
    from radtrack.store.runs import close_orphaned_parent
    from radtrack.store.uris import redact, with_password

    path = root / FILE
    if not path.is_file():
        return 0
    done: list[dict] = []
    for entry in json.loads(path.read_text() or "[]"):
        uri = tracking_uri or with_password(entry.get("tracking_uri", ""))
        try:
            raise_if_away(uri)
            c = make_client(uri)
            for run_id in entry.get("runs", []):
                try:
                    run = c.get_run(run_id)
                except MlflowException:
                    continue  # not in this store (any more): nothing to close
                if run.info.status == "RUNNING":
                    c.set_tag(run_id, schema.STOPPED_BY, schema.STOPPED_BY_LAUNCHER_LOST)
                    c.set_terminated(run_id, "KILLED")
                    log(f"{run_id}: an earlier run of the sheet, still RUNNING (its launcher "
                        "died); marked KILLED")
                parent = close_orphaned_parent(c, run_id)
                if parent:
                    log(f"{parent}: its workload (parent) run was still RUNNING; marked KILLED")
            done.append(entry)
        except Exception as exc:  # noqa: BLE001 - the store is away or refuses: kept
            log(f"earlier runs {', '.join(entry.get('runs', []))}: could not be looked up in "
                f"{redact(uri)} ({describe(exc)}); kept in {path}")
    _edit(root, lambda entries: [e for e in entries if e not in done])
    return len(json.loads(path.read_text())) if path.is_file() else 0
