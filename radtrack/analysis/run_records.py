"""One record per run, as plain dicts: what ``load_runs`` puts in a frame, without the frame.

The frontend's picker reads an experiment's listing on every experiment click and wants
row dicts; a frame built and then converted (``to_dict("records")``) spent about 20 ms of
pandas on a listing of 15 runs, as long as MLflow's search itself (docs/performance.md,
"Frontend"). So the records are built here, in the frame's shape (every column, in its
order; times as UTC timestamps; the same sort), and ``load_runs`` makes its frame from
them: one path for both. A value a run lacks is ``None`` in a record (``pd.NaT`` for a
time); the frame holds it as pandas infers (NaN in a text or number column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from radtrack.vocab import schema
from radtrack.vocab.schema import canonical_key

if TYPE_CHECKING:  # a light client's runs (radtrack/store/entities.py) have the same fields
    from mlflow.entities import Run

PARENT_TAG = "mlflow.parentRunId"
RUN_COLUMNS = [
    "run_id", "run_name", "experiment_id", "experiment", "workload", "letter", "status",
    "start_time", "end_time", "duration_s", "devices", "collocation", "file", "parent_run_id",
    "artifact_uri",
]
_TIMES = ("start_time", "end_time")


def run_row(run: Run, experiment_name: str) -> dict[str, object]:
    """The raw row of one run: identity, timing (ms), placement, ``param.*``, ``tag.*``,
    ``metric.*`` (each metric's latest value)."""
    info, tags, params = run.info, run.data.tags, run.data.params
    workload = tags.get(schema.WORKLOAD, "")
    duration = ((info.end_time - info.start_time) / 1000.0
                if info.end_time and info.start_time else float("nan"))
    row: dict[str, object] = {
        "run_id": info.run_id,
        "run_name": info.run_name,
        "experiment_id": info.experiment_id,
        "experiment": experiment_name,
        "workload": int(workload) if workload.lstrip("-").isdigit() else None,
        "letter": tags.get(schema.LETTER),
        "status": info.status,
        "start_time": info.start_time,
        "end_time": info.end_time,
        "duration_s": duration,
        "devices": tags.get(schema.DEVICES, params.get("devices")),
        "collocation": tags.get(schema.COLLOCATION, params.get("collocation")),
        "file": params.get("script", tags.get("mlflow.source.name")),
        "parent_run_id": tags.get(PARENT_TAG),
        "artifact_uri": info.artifact_uri,
    }
    row.update({f"param.{k}": v for k, v in params.items()})
    row.update({f"tag.{k}": v for k, v in tags.items()})
    # listener series stored as system/<key> (or bare, by older radtrack) read as <key>
    row.update({f"metric.{canonical_key(k)}": v for k, v in run.data.metrics.items()})
    return row


def columns_of(rows: list[dict[str, object]]) -> list[str]:
    """The columns of ``rows``: the run columns, then every ``param.*``, ``tag.*``,
    ``metric.*`` any row has, each group sorted."""
    extra = sorted({key for row in rows for key in row} - set(RUN_COLUMNS))
    return (RUN_COLUMNS + [c for c in extra if c.startswith("param.")]
            + [c for c in extra if c.startswith("tag.")]
            + [c for c in extra if c.startswith("metric.")])


def records(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Raw rows as complete records: every column (``None`` where a run lacks it), times as
    UTC timestamps (``pd.NaT`` when unset), sorted by start time, then workload and
    letter, each missing value last."""
    if not rows:
        return []
    columns = columns_of(rows)
    out = []
    for row in rows:
        record = {column: row.get(column) for column in columns}
        for column in _TIMES:
            value = record[column]
            record[column] = pd.NaT if pd.isna(value) else pd.Timestamp(value, unit="ms", tz="UTC")
        out.append(record)
    # Rows of one workload start together; letters make the order deterministic.
    out.sort(key=lambda r: (_last(r["start_time"]), _last(r["workload"]), _last(r["letter"])))
    return out


def records_frame(recs: list[dict[str, object]]) -> pd.DataFrame:
    """:func:`records` as ``load_runs``' frame (``workload`` Int64, times UTC datetimes)."""
    if not recs:
        return pd.DataFrame(columns=RUN_COLUMNS)
    frame = pd.DataFrame(recs, columns=list(recs[0]))
    frame["workload"] = frame["workload"].astype("Int64")
    for column in _TIMES:
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def _last(value: object) -> tuple[int, object]:
    """A sort key that puts missing values after every present one."""
    return (1, 0) if pd.isna(value) else (0, value)
