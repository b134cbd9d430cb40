"""A run's telemetry at its end: per listener a Parquet trace, its probe JSON, summary metrics.

Each trace and its summaries cover the run's span (radtrack/store/spans.py): the readings
inside it and the span's end points, so a mean times the run's duration is the integral.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.listeners.protocol import Hello, as_dict, late_keys
from radtrack.store.recovery import read_spool
from radtrack.store.spool import MAX_METRICS_PER_CALL, Span, Stream
from radtrack.vocab.schema import (
    READINGS_STAT,
    TELEMETRY_DIR,
    rail_energy_key,
    stored_key,
    summary_key,
)

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient


def store_traces(client: MlflowClient, run_id: str, streams: Iterable[Stream],
                 frames: dict[str, pd.DataFrame], span: Span | None = None,
                 summaries: list | None = None) -> int:
    """Log each stream's trace (``telemetry/<listener>.parquet``), probe
    (``telemetry/<listener>.json``, its hello) and summary metrics over ``span`` (the run's;
    None: every reading), and each series' points at the span's ends (the readings inside
    it are shipped as they come: radtrack/store/shipping.py); ``frames`` gets each trace as
    it is stored. Returns how many end points it stored (listener points, like the shipped).
    With ``summaries`` the summary and end points go there instead, for the caller to store
    with the run's end (radtrack/run/row_end.py: one call to a server fewer per row)."""
    from radtrack.store.entities import Metric
    from radtrack.store.spans import span_frame

    span = span or Span()
    streams = list(streams)  # read twice: the traces, then the GPU models their hellos declare
    summary: list[Metric] = []
    figures: dict[str, float] = {}  # one value a key (a counter rail's is its total too)
    ends = 0
    now = int(time.time() * 1000)
    stored: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in streams:
            frame, counts = span_frame(read_spool(s.path), span.start, span.end, late_keys(s.hello))
            log_trace(client, run_id, s.name, frame, s.hello, Path(tmp))
            if frame.empty:
                continue
            frames[s.name] = stored[s.name] = frame
            figures.update(summarize(frame, counts))
            points = end_points(frame, span)
            summary += points
            ends += len(points)
    figures.update(energy_summaries(stored, _declared(streams)))
    summary += [Metric(k, v, now, 0) for k, v in figures.items()]
    if summaries is not None:
        summaries += summary
        return ends
    for i in range(0, len(summary), MAX_METRICS_PER_CALL):
        client.log_batch(run_id, metrics=summary[i:i + MAX_METRICS_PER_CALL])
    return ends


def end_points(frame: pd.DataFrame, span: Span) -> list:
    """The MLflow points of ``frame``'s rows at the span's ends (spans.span_frame added
    them): stamped in whole ms inside the span, under the ``system/`` prefix."""
    import math

    from radtrack.store.entities import Metric

    out = []
    for at, ms in ((span.start, None if span.start is None else math.ceil(span.start * 1000)),
                   (span.end, None if span.end is None else math.floor(span.end * 1000))):
        if at is None or ms is None:
            continue
        for _, row in frame[frame["time"] == at].iterrows():
            out += [Metric(stored_key(k), float(row[k]), ms, int(row["step"]))
                    for k in frame.columns[2:] if row[k] == row[k]]
    return out


def log_trace(client: MlflowClient, run_id: str, name: str, frame: pd.DataFrame,
              hello: Hello | None, tmp: Path) -> None:
    """One listener's probe (``telemetry/<name>.json``, its hello) and, when it has
    readings, its trace (``telemetry/<name>.parquet``), written through ``tmp``."""
    if hello is not None:
        probe = tmp / f"{name}.json"
        probe.write_text(json.dumps(as_dict(hello), indent=1))
        client.log_artifact(run_id, str(probe), TELEMETRY_DIR)
    if not frame.empty:
        out = tmp / f"{name}.parquet"
        frame.to_parquet(out, index=False)
        client.log_artifact(run_id, str(out), TELEMETRY_DIR)


def _declared(streams: Iterable[Stream]) -> dict[str, str]:
    """scope -> GPU model the run's listeners declared in their hellos (picks the sensor's
    constants: radtrack/compute/energy_error.py)."""
    from radtrack.compute.energy_figures import gpu_models

    tags: dict[str, object] = {}
    for s in streams:
        tags.update(getattr(s.hello, "tags", None) or {})
    return gpu_models(tags)


def energy_summaries(frames: dict[str, pd.DataFrame],
                     models: dict[str, str] | None = None) -> dict[str, float]:
    """Each power rail's energy over the frames (``summary/<rail>/energy_j``:
    radtrack/compute/energy_sums.py ``rail_energies``), each GPU energy's 95 % interval and
    flag, and the activity model's second figure (radtrack/compute/energy_figures.py); no
    interval, with one line on stderr, where the sensor constants given in
    $RADTRACK_SENSOR_CONSTANTS are unusable (the counter's figure stays)."""
    import sys

    from radtrack.compute.energy_figures import run_figures

    out = rail_summaries(frames)
    try:
        out.update(run_figures(frames, models=models))
    except ValueError as exc:
        print(f"radtrack: energy intervals left out: {exc}", file=sys.stderr)
    return out


def rail_summaries(frames: dict[str, pd.DataFrame]) -> dict[str, float]:
    """``summary/<rail>/energy_j`` of every power rail in the frames (each cut to the run's
    span: its integral over the span), where it can be told."""
    from radtrack.compute.energy_sums import rail_energies

    readings = {}
    for frame in frames.values():
        for key in frame.columns[2:]:
            part = frame[["time", key]].dropna().sort_values("time", kind="stable")
            readings[str(key)] = (part["time"].to_numpy(dtype=float), part[key].to_numpy(dtype=float))
    return {rail_energy_key(rail): joules for rail, joules in rail_energies(readings).items()
            if joules == joules}


def summarize(frame: pd.DataFrame, counts: dict[str, int] | None = None) -> dict[str, float]:
    """summary/<key>/mean|min|max for every metric; summary/<key> for energy counters; with
    ``counts`` (each key's readings in the span: spans.span_frame), ``summary/<key>/n``.
    Over ``frame`` as it is: cut to a span with its end points, the mean is the span's."""
    from radtrack.compute.stats import counter_delta, time_weighted_mean  # numpy: not at launch
    from radtrack.vocab.energy_sources import bridging_power_key

    out: dict[str, float] = {}
    for key, n in (counts or {}).items():
        out[summary_key(key, READINGS_STAT)] = float(n)
    t = frame["time"].to_numpy()
    for key in frame.columns[2:]:
        v = frame[key].to_numpy(dtype=float)
        if key.endswith("energy_j"):
            # summed over the counter's lives, a gap between two bridged by the power beside it
            power = bridging_power_key(key)
            delta = counter_delta(v, t, (t, frame[power].to_numpy(dtype=float))
                                  if power in frame.columns else None)
            if delta == delta:  # fewer than two readings: no energy rather than a fake 0
                out[summary_key(key)] = delta
            continue
        mean = time_weighted_mean(t, v)
        if mean != mean:  # all NaN
            continue
        out[summary_key(key, "mean")] = mean
        out[summary_key(key, "min")] = float(frame[key].min())
        out[summary_key(key, "max")] = float(frame[key].max())
    return out
