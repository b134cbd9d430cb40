"""Runs a row's script tree made that radtrack could not bind (docs/mlflow-code.md).

Every Python process of the script's tree records its runs through the hook folder on
``PYTHONPATH`` (radtrack/script/hook/sitecustomize.py). A process that dropped it (a child
started with a cleared or rebuilt environment: ``env={}``, ``env -i``, a container) makes
runs radtrack never hears of. After the row, the row's store is searched for runs that
started inside the row's span, that no row of this launch recorded and radtrack did not make,
and whose MLflow source (``mlflow.source.name``: the file the process ran) lies in the
script's folder or below it; each is named, once, in one line per row. They are not bound:
nothing ties them to the row but their time and file.

Not detected: such runs in another store than the row's (a child that also lost
``MLFLOW_TRACKING_URI`` writes to MLflow's default store), runs whose source is outside the
script's folder, and more than :data:`LIMIT` runs started during the row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.postrun.end_inputs import EndRow as Row

LIMIT = 500  # runs started during the row that are looked at


def recorded_ids(row: Row) -> set[str]:
    """Run ids recorded by any row folder written during this row (co-located rows, this
    launch's other rows: ``$RADTRACK_HOME/runs/*/mlflow-runs.jsonl``)."""
    found: set[str] = set()
    since = (row.started or 0.0) - 1.0
    for events in row.folder.parent.glob("*/mlflow-runs.jsonl"):
        try:
            if events.stat().st_mtime < since:
                continue
            for line in events.read_text(encoding="utf-8").splitlines():
                try:
                    found.add(str(json.loads(line)["run_id"]))
                except (ValueError, KeyError, TypeError):
                    continue
        except OSError:
            continue
    return found


def unbound_runs(row: Row, client: Any) -> list[Any]:
    """Runs of the row's store that its script's tree made but no hook recorded (above)."""
    start, end = row.started, row.ended
    if not start or not end:
        return []
    folder = Path(row.spec.file).resolve().parent
    experiments = [e.experiment_id for e in client.search_experiments()]
    if not experiments:
        return []
    runs = client.search_runs(
        experiments, max_results=LIMIT,
        filter_string=(f"attributes.start_time >= {int(start * 1000) - 1000} "
                       f"AND attributes.start_time <= {int(end * 1000) + 1000}"))
    known = recorded_ids(row) | {row.run_id}
    out = []
    for run in runs:
        tags = run.data.tags
        if run.info.run_id in known or schema.ROLE in tags:
            continue
        source = tags.get("mlflow.source.name", "")
        try:
            inside = bool(source) and Path(source).resolve().is_relative_to(folder)
        except (OSError, ValueError):
            inside = False
        if inside:
            out.append(run)
    return out


def say_unbound(row: Row, client: Any, say: Any) -> list[Any]:
    """One line naming the runs :func:`unbound_runs` finds (none: nothing said)."""
    try:
        runs = unbound_runs(row, client)
    except Exception:  # noqa: BLE001 - a store that cannot search: nothing to say
        return []
    if runs:
        named = ", ".join(f"{r.info.run_id} ({r.info.run_name}, from "
                          f"{Path(r.data.tags.get('mlflow.source.name', '?')).name})"
                          for r in runs[:5])
        more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
        say(f"{row.spec.letter}: {len(runs)} run(s) made during this row by a process radtrack's "
            f"hook was not in (its environment dropped PYTHONPATH or RADTRACK_RUN_EVENTS) got no "
            f"telemetry and no link: {named}{more}; the row's telemetry is on run {row.run_id}")
    return runs
