"""Bind a row's telemetry to the MLflow runs its script made (docs/mlflow-code.md).

The row run stays the record (status, sheet, workload, co-location accounting). Each run
the script, or any Python process of its tree (child scripts, spawned workers, ranks),
created or resumed (radtrack/script/run_events.py) gets, for the time it was
active, what the row run got for the whole row: the listener series under ``system/``,
the Parquet trace slices and probes under ``telemetry/``, the summary metrics (means,
energy, attributed energy on a shared GPU, CO2e), the listener and GPU tags; and the two
point at each other (``radtrack.row_run`` / ``radtrack.script_runs``). A run the script
left open, or that MLflow's exit handler closed although the script failed, ends with the
row's status: the script's exit code decides; one that ended FAILED or KILLED because
radtrack stopped the row (``--max-time``, Ctrl-C) ends with the row's status too, tagged
``radtrack.stopped_by``. Each run's name is read back from the store (a rename by tag,
``update_run`` or a framework shows). Over-long params are kept whole
(radtrack/postrun/long_params.py); runs made by a process without the hook are named
(radtrack/postrun/unbound.py).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from radtrack.listeners.protocol import late_keys
from radtrack.postrun.end_inputs import EndRow
from radtrack.script import handshake
from radtrack.script.run_events import Span, absolute_uri, read_spans
from radtrack.store.spans import span_frame
from radtrack.store.sqlwriter import SqlMetricWriter
from radtrack.store.traces import energy_summaries, log_trace, summarize
from radtrack.store.tracking import redact
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.compute.attribution import GpuAccount
    from radtrack.compute.carbon import Carbon

_COPIED_TAGS = (schema.LISTENER_TAG_PREFIX, schema.TAG_PREFIX + "gpu.", schema.ATTRIBUTION_TAG_PREFIX)
# not the workload, letter or experiment tags: readers list a run carrying those as a row
_COPIED_EXACT = (schema.DEVICES, schema.COLLOCATION, schema.HOSTNAME, schema.VERSION)


@dataclass
class Bound:
    """What binding did for one script run."""

    span: Span
    error: str = ""


def bind_row(row: EndRow, client: MlflowClient, uri: str, accounts: dict[str, GpuAccount],
             carbon: Carbon | None, say: Callable[[str], None]) -> list[Bound]:
    """Bind ``row``'s telemetry to every run its script's tree made; link them with the row
    run; store over-long params whole; name the runs made without the hook."""
    from radtrack.postrun.long_params import store_long_params
    from radtrack.postrun.unbound import say_unbound

    spans = [s for s in read_spans(row.folder / "mlflow-runs.jsonl") if s.run_id != row.run_id]
    home = absolute_uri(uri)
    clients: dict[str, Any] = {home: client}
    out = _bind_spans(row, client, uri, spans, clients, accounts, carbon, say) if spans else []
    where = {b.span.run_id: clients.get(b.span.tracking_uri, client) for b in out if not b.error}
    names = {row.run_id: row.name, **{b.span.run_id: b.span.name or b.span.run_id for b in out}}
    store_long_params(row, lambda run_id: where.get(run_id, client), names, say)
    say_unbound(row, client, say)
    return out


def _bind_spans(row: EndRow, client: MlflowClient, uri: str, spans: list[Span], clients: dict[str, Any],
                accounts: dict[str, GpuAccount], carbon: Carbon | None,
                say: Callable[[str], None]) -> list[Bound]:
    home = absolute_uri(uri)
    out: list[Bound] = []
    stop = handshake.stop_request(row.folder)
    for span in spans:
        b = Bound(span)
        out.append(b)
        span.tracking_uri = absolute_uri(span.tracking_uri) if span.tracking_uri else home
        try:
            c = clients.get(span.tracking_uri)
            if c is None:
                _check_exists(span.tracking_uri)
                from radtrack.store.mlflow_client import mlflow_client as make_client

                c = clients[span.tracking_uri] = make_client(span.tracking_uri)
            _bind(row, c, span, span.tracking_uri != home, uri, accounts, carbon, stop)
        except Exception as exc:  # noqa: BLE001 - the row run keeps everything regardless
            b.error = f"{type(exc).__name__}: {exc}"[:300]
    failed = [b for b in out if b.error]
    if failed:
        first = failed[0]
        say(f"{row.spec.letter}: the script's run {first.span.run_id} is in "
            f"{redact(first.span.tracking_uri)}, which radtrack could not write "
            f"({first.error}); its telemetry is in run {row.run_id} in {redact(uri)}. "
            f"Track both in one store with --tracking-uri {redact(first.span.tracking_uri)}")
    here = [b.span.run_id for b in out if b.span.tracking_uri == home]
    there = [b.span for b in out if b.span.tracking_uri != home]
    tags = {schema.SCRIPT_RUNS: ",".join([*here, *(s.run_id for s in there)])}
    if there:
        tags[schema.SCRIPT_TRACKING_URI] = ",".join(dict.fromkeys(s.tracking_uri for s in there))
    from radtrack.store.tracking import set_tags

    set_tags(client, row.run_id, tags)
    row.tags.update(tags)
    return out


def _check_exists(uri: str) -> None:
    """Refuse a local store that is gone (opening it would create an empty one)."""
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
    elif uri.startswith("file://"):
        path = Path(uri.removeprefix("file://"))
    else:
        return
    if not path.exists():
        raise FileNotFoundError(f"{path} no longer exists")


def _bind(row: EndRow, c: MlflowClient, span: Span, elsewhere: bool, row_uri: str,
          accounts: dict[str, GpuAccount], carbon: Carbon | None, stop: dict | None) -> None:
    from radtrack.store.entities import Metric
    from radtrack.store.tracking import set_tags

    # the name the store holds now: renamed by a tag, update_run or a framework, it reads
    # the same in the closing line, the report and the page
    span.name = c.get_run(span.run_id).info.run_name or span.name
    end_of_row = row.ended or time.time()
    start, end = span.start, span.end if span.end is not None else end_of_row
    frames = row.sink.frames if row.sink is not None else {}
    # cut like a row's own series: the readings inside the run's span plus a point at each
    # end (radtrack/store/spans.py), so its mean x duration is its integral
    sliced: dict[str, pd.DataFrame] = {}
    readings: dict[str, int] = {}
    for name, f in frames.items():
        hello = row.sink.hello(name) if row.sink is not None else None
        cut, counts = span_frame(f, start, end, late_keys(hello))  # a GPU followed mid-run: from then
        if not cut.empty:
            sliced[name] = cut.reset_index(drop=True)
            readings.update(counts)
    points: list[tuple[str, float, int, int]] = []
    for frame in sliced.values():
        points += _points(frame)
    SqlMetricWriter(c).log_metrics(span.run_id, points)
    now = int(time.time() * 1000)
    summary = {schema.DURATION_KEY: end - start}
    summary.update({schema.summary_key(k, schema.READINGS_STAT): float(n) for k, n in readings.items()})
    for frame in sliced.values():
        if len(frame):
            summary.update(summarize(frame.reset_index(drop=True)))
    from radtrack.compute.energy_figures import gpu_models

    summary.update(energy_summaries({k: f.reset_index(drop=True) for k, f in sliced.items() if len(f)},
                                    gpu_models(row.tags)))
    summary.update(_attributed(row, accounts, start, end, carbon, sliced))
    c.log_batch(span.run_id, metrics=[Metric(k, float(v), now, 0) for k, v in summary.items()])
    _artifacts(row, c, span.run_id, sliced)
    tags = {k: v for k, v in {**row.record_tags, **row.tags}.items()
            if k.startswith(_COPIED_TAGS) or k in _COPIED_EXACT}
    tags.update({schema.ROLE: schema.ROLE_SCRIPT, schema.ROW_RUN: row.run_id})
    if span.rank:
        tags[schema.SCRIPT_RANK] = span.rank
    stopped = _stopped(row, span, stop)
    if stopped:
        tags[schema.STOPPED_BY] = row.stopped_by
    if elsewhere:
        tags[schema.ROW_TRACKING_URI] = redact(row_uri)
    if carbon is not None:
        tags.update(carbon.tags())
    status = _status(row, span, stopped)
    if status is not None:
        how = ("ended by the stop radtrack asked for" if stopped and span.end is not None else
               "closed by MLflow at exit" if span.at_exit else "still open")
        tags[schema.STATUS_NOTE] = (f"ended {status} by radtrack: the script exited {row.exit_code} "
                                    f"(row {row.status}) with this run {how}")
    set_tags(c, span.run_id, tags)
    if status is not None:
        c.set_terminated(span.run_id, status, end_time=int(end * 1000))


def _stopped(row: EndRow, span: Span, stop: dict | None) -> bool:
    """Whether radtrack's stop of the row (its stop file) ended this run: still open, or
    ended after the stop was asked for."""
    if not row.stopped_by or stop is None:
        return False
    try:
        asked = float(stop.get("t", 0.0))
    except (TypeError, ValueError):
        asked = 0.0
    return span.end is None or span.end >= asked


def _status(row: EndRow, span: Span, stopped: bool = False) -> str | None:
    """The status a script run must end with, or None to leave it as the script ended it."""
    if span.end is None:
        return row.status or "FAILED"
    if stopped and row.status and span.status in ("FAILED", "KILLED") and span.status != row.status:
        return row.status
    if row.status and row.status != "FINISHED" and span.at_exit and span.status == "FINISHED":
        return row.status
    return None


def _points(frame: pd.DataFrame) -> list[tuple[str, float, int, int]]:
    """(system/<key>, value, ms, step) for every reading in a trace slice, as the sink stored them."""
    if frame.empty:
        return []
    ts = (frame["time"].to_numpy(dtype=float) * 1000).astype("int64")
    steps = frame["step"].to_numpy(dtype="int64")
    out: list[tuple[str, float, int, int]] = []
    for key in frame.columns[2:]:
        values = frame[key].to_numpy(dtype=float)
        ok = ~np.isnan(values)
        name = schema.stored_key(key)
        out += [(name, float(v), int(t), int(s)) for v, t, s in zip(values[ok], ts[ok], steps[ok],
                                                                      strict=True)]
    return out


def _attributed(row: EndRow, accounts: dict[str, GpuAccount], start: float, end: float,
                carbon: Carbon | None, frames: dict[str, pd.DataFrame]) -> dict[str, float]:
    """The span's share of the row's attributed energy per GPU scope, with its GPU's 95 %
    interval over the span (radtrack/compute/energy_figures.py), and its CO2e."""
    from radtrack.compute.energy_figures import flag_code, gpu_models, span_interval
    from radtrack.compute.split_model import with_split

    out: dict[str, float] = {}
    total = 0.0
    for acc in accounts.values():
        if row.run_id not in acc.energy:
            continue
        scope = next((k.removeprefix(schema.ATTRIBUTION_TAG_PREFIX).removesuffix(".gpu")
                      for k, v in row.tags.items()
                      if k.startswith(schema.ATTRIBUTION_TAG_PREFIX) and k.endswith(".gpu")
                      and v == acc.gpu), None)
        if scope is None:
            continue
        lo = np.maximum(acc.edges[:-1], start)
        hi = np.minimum(acc.edges[1:], end)
        frac = np.clip(hi - lo, 0.0, None) / np.diff(acc.edges)
        joules = float((acc.energy[row.run_id].to_numpy() * frac).sum())
        key = schema.attribution_summary_key(scope, "energy_j")
        out[key] = joules
        total += joules
        ci = span_interval(frames, scope, start, end, gpu_models(row.tags).get(scope))
        # the GPU's interval and the split's own bound (radtrack/compute/split_model.py)
        pct, flag = with_split(ci.ci95_pct if ci is not None else float("nan"),
                               flag_code(ci) if ci is not None else 0.0, acc, row.run_id)
        if np.isfinite(pct):
            out[schema.ci_key(key)] = pct
            out[schema.ci_flag_key(key)] = flag
    if carbon is not None and out:
        out[schema.CO2E_KEY] = carbon.co2e_g(total)
    return out


def _artifacts(row: EndRow, c: MlflowClient, run_id: str, sliced: dict[str, pd.DataFrame]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, frame in sliced.items():
            hello = row.sink.hello(name) if row.sink is not None else None
            log_trace(c, run_id, name, frame.reset_index(drop=True), hello, Path(tmp))
