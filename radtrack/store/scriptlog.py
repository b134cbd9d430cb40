"""The script's own logging through RADTBenchmark, spooled like the hardware samples, shipped.

``RADTBenchmark.log_metric`` and friends (radtrack/script/benchmark.py) never call the store
from the script's process: each call is one JSON line appended to
``<row spool>/script/records.jsonl`` (an artifact is copied to ``script/artifacts/<n>/`` at
the call, so the script may change or delete its file afterwards: radtrack/script/records.py,
the script's side). The launcher's shipper sends them to the run (the row run, or the script's own run that was active at the call)
every round, and at the end; ``radtrack sync`` sends what is left. ``records.shipped`` holds
the byte offset up to which lines are stored, so each value is stored once however long the
store was away (a resent metric is a no-op: MLflow's metric primary key; a param or tag
resent has the same value).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.atomic import write_atomic
from radtrack.script.records import RECORDS, SHIPPED

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger(__name__)

MAX_METRICS, MAX_PARAMS, MAX_TAGS = 1000, 100, 1000  # MLflow's log_batch limits


def pending(folder: Path) -> bool:
    """Whether ``folder`` holds records not stored yet."""
    try:
        size = (folder / RECORDS).stat().st_size
    except OSError:
        return False
    return size > _offset(folder)


def _offset(folder: Path) -> int:
    try:
        return int((folder / SHIPPED).read_text() or 0)
    except (OSError, ValueError):
        return 0


def _mark(folder: Path, offset: int) -> None:
    try:
        write_atomic(folder / SHIPPED, str(offset), durable=False)  # a lag is a resend
    except OSError as exc:  # a full disk: resent later, a no-op then
        log.warning("radtrack: could not mark script records stored (%s)", exc)


def ship(client: MlflowClient, row_run_id: str, folder: Path, refused: list[str]) -> bool:
    """Store every complete record past ``records.shipped``; True when none is left. A store
    that is away stops it (False, resumed next time); a value MLflow refuses (a param logged
    again with another value, say) is skipped and described in ``refused``."""
    from radtrack.store.entities import Metric, Param, RunTag
    from radtrack.store.outage import is_outage

    start = _offset(folder)
    try:
        with (folder / RECORDS).open("rb") as f:
            f.seek(start)
            data = f.read()
    except OSError:
        return True
    end = data.rfind(b"\n") + 1  # a torn last line waits for the rest of it
    batch: list[tuple[int, dict[str, Any]]] = []
    pos = start
    for raw in data[:end].splitlines(keepends=True):
        pos += len(raw)
        try:
            batch.append((pos, json.loads(raw)))
        except ValueError:
            batch.append((pos, {"k": "unreadable"}))
    i = 0
    while i < len(batch):
        group = _group(batch, i)
        records = [r for _, r in batch[i:i + group]]
        run = records[0].get("run") or row_run_id
        try:
            kind = records[0].get("k")
            if kind == "metric":
                client.log_batch(run, metrics=[Metric(r["key"], float(r["value"]), int(r["ts"]),
                                                      int(r["step"])) for r in records])
            elif kind == "param":
                client.log_batch(run, params=[Param(r["key"], r["value"]) for r in records])
            elif kind == "tag":
                client.log_batch(run, tags=[RunTag(r["key"], r["value"]) for r in records])
            elif kind in ("artifact", "artifacts"):
                path = folder / records[0]["path"]
                if kind == "artifact":
                    client.log_artifact(run, str(path), records[0].get("artifact_path"))
                else:
                    client.log_artifacts(run, str(path), records[0].get("artifact_path"))
                shutil.rmtree(path.parent, ignore_errors=True)
        except Exception as exc:  # noqa: BLE001 - a refused value must not block the rest
            if is_outage(exc):
                return False
            if group > 1:  # one of them was refused: each alone, to keep the others
                for p, r in list(batch[i:i + group]):
                    one = _ship_one(client, row_run_id, folder, r, refused)
                    if one is False:
                        return False
                    _mark(folder, p)
                i += group
                continue
            refused.append(_what(records[0], exc))
        i += group
        _mark(folder, batch[i - 1][0])
    return True


def _what(record: dict[str, Any], exc: BaseException) -> str:
    from radtrack.store.outage import describe

    return f"{record.get('k')} {record.get('key') or record.get('path')}: {describe(exc)}"


def _ship_one(client: MlflowClient, row_run_id: str, folder: Path, record: dict[str, Any],
              refused: list[str]) -> bool | None:
    """One metric, param or tag record alone; False when the store is away."""
    from radtrack.store.entities import Metric, Param, RunTag
    from radtrack.store.outage import is_outage

    run = record.get("run") or row_run_id
    try:
        if record.get("k") == "metric":
            client.log_batch(run, metrics=[Metric(record["key"], float(record["value"]),
                                                  int(record["ts"]), int(record["step"]))])
        elif record.get("k") == "param":
            client.log_batch(run, params=[Param(record["key"], record["value"])])
        elif record.get("k") == "tag":
            client.log_batch(run, tags=[RunTag(record["key"], record["value"])])
    except Exception as exc:  # noqa: BLE001 - as in ship()
        if is_outage(exc):
            return False
        refused.append(_what(record, exc))
    return None


def _group(batch: list[tuple[int, dict[str, Any]]], i: int) -> int:
    """How many records from ``i`` go in one call: consecutive ones of the same kind and run
    (metrics, params, tags) within log_batch's limits; an artifact alone."""
    first = batch[i][1]
    kind, run = first.get("k"), first.get("run")
    limit = {"metric": MAX_METRICS, "param": MAX_PARAMS, "tag": MAX_TAGS}.get(kind or "", 1)
    n = 1
    keys = {first.get("key")}
    while i + n < len(batch) and n < limit:
        r = batch[i + n][1]
        if r.get("k") != kind or r.get("run") != run:
            break
        if kind != "metric" and r.get("key") in keys:  # the same param/tag twice: next call
            break
        keys.add(r.get("key"))
        n += 1
    return n
