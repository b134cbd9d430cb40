"""Summaries of stored runs: the launcher's stored ``summary/*`` metrics where they answer,
the series where they do not, and each run's attributed energy.

``energy_j`` is the energy the run is charged: its attributed share of every GPU it used
(co-location accounting, radtrack/compute/attribution.py, stored by the launcher as
``summary/attribution/<scope>/energy_j``), the whole GPU for a run alone on it, NaN for a
co-located run recorded without attribution. ``gpu_energy_j`` is the energy its GPUs used
over its span, whoever used it; ``energy_per_<unit>_j`` is based on ``energy_j``.
``samples`` is the fewest readings any of its summarised hardware series holds (a mean of
3 readings is not a measurement: radtrack/compute/result_checks.py flags it): the stored
count ``summary/<key>/n`` where the run has one, else counted in the series where they were
read anyway, else the fewest samples a listener of those series gave the run
(``summary/monitoring/<listener>/samples``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from radtrack.analysis.data import list_metrics, load_runs, load_series, resolve_tracking_uri
from radtrack.analysis.summary_energy import apply_attribution
from radtrack.compute.summary import (
    QUANTITIES,
    _assemble,
    _keys_for,
    _scale,
    _series_duration,
    _series_parts,
    summarize_series,
    summary_metric_keys,
)
from radtrack.vocab import energy_sources as es
from radtrack.vocab.schema import (
    ATTRIBUTION_PREFIX,
    DURATION_KEY,
    MONITORING_PREFIX,
    SUMMARY_ATTRIBUTION_PREFIX,
    SUMMARY_PREFIX,
    SUMMARY_WORKLOAD_PREFIX,
    monitoring_key,
)

IDENTITY_COLUMNS = ["run_id", "run_name", "workload", "letter", "status", "file", "devices",
                    "collocation"]

#: (run ids, metric keys) -> the long series frame of load_series; the frontend passes its cache
SeriesLoader = Callable[[list[str], list[str]], pd.DataFrame]
_STORED_STATS = ("mean", "min", "max")
_METRIC_COLUMN = "metric."
_DERIVED = (SUMMARY_ATTRIBUTION_PREFIX, SUMMARY_WORKLOAD_PREFIX, ATTRIBUTION_PREFIX)


@dataclass
class _StoredPlan:
    """What a FINISHED run's stored summary metrics answer, and which series are still needed."""

    energy: float | None = None  # None: compute from the series of ``energy_keys``
    energy_keys: list[str] = field(default_factory=list)
    quantities: dict[str, dict[str, float]] = field(default_factory=dict)
    series_quantities: dict[str, list[str]] = field(default_factory=dict)  # name -> its keys
    rate_keys: list[str] = field(default_factory=list)

    def keys(self) -> list[str]:
        wanted = set(self.rate_keys)
        if self.energy is None:
            wanted.update(self.energy_keys)
        for qkeys in self.series_quantities.values():
            wanted.update(qkeys)
        return sorted(wanted)


def _finite(value: object) -> float | None:
    if value is None or value is pd.NA:
        return None
    number = float(value)  # type: ignore[arg-type]
    return None if np.isnan(number) else number


def _stored_metrics(row: Mapping[str, object]) -> tuple[set[str], dict[str, float]]:
    """A run's metric keys (latest values present) and its ``summary/*`` values, from a
    :func:`load_runs` row."""
    keys: set[str] = set()
    stored: dict[str, float] = {}
    for column, value in row.items():
        if not isinstance(column, str) or not column.startswith(_METRIC_COLUMN):
            continue
        number = _finite(value)
        if number is None:
            continue
        key = column[len(_METRIC_COLUMN):]
        if key.startswith(_DERIVED):
            continue  # accounting results, not summaries of a listener's series
        if key.startswith(SUMMARY_PREFIX):
            stored[key] = number
        else:
            keys.add(key)
    # A key whose latest logged value was NaN still has its stored summary.
    for key in stored:
        base, _, stat = key[len(SUMMARY_PREFIX):].rpartition("/")
        if stat in _STORED_STATS and base:
            keys.add(base)
        elif (found := es.source(key[len(SUMMARY_PREFIX):])) is not None and found.kind == "counter":
            keys.add(key[len(SUMMARY_PREFIX):])
    return keys, stored


def _has_stored_summaries(stored: Mapping[str, float]) -> bool:
    return any(k.endswith(("/mean", "/energy_j")) for k in stored)


def _plan_from_stored(keys: set[str], stored: Mapping[str, float], quantiles: bool) -> _StoredPlan:
    """Use the sink's ``summary/<key>/mean|max`` and ``summary/<l>/<scope>/energy_j``
    wherever they mean exactly what the series path computes (radtrack/store/sink.py
    ``summarize``: the same trapezoid mean, the counter's last minus first reading)."""
    plan = _StoredPlan()
    ordered = sorted(keys)
    # Energy: per device, its counter (the highest-priority listener's, by declared role:
    # radtrack/vocab/energy_sources.py), else integrated power from the series
    chosen = es.energy_sources(ordered)
    plan.energy_keys = sorted(s.key for found in es.sources(ordered).values() for s in found
                              if s.kind in es.ENERGY_KINDS)
    if chosen:
        total = 0.0
        for src in chosen.values():
            # the sink stores no energy for a counter with fewer than two readings: then
            # the series path decides (it falls back to integrated power)
            value = (_finite(stored.get(f"{SUMMARY_PREFIX}{src.key}")) if src.kind == "counter"
                     else None)
            if value is None:
                total = float("nan")
                break
            total += value * src.scale
        plan.energy = None if np.isnan(total) else total
    else:
        plan.energy = float("nan")
    for q in QUANTITIES:
        qkeys = _keys_for(q, ordered)
        if not qkeys:
            continue
        scale = _scale(qkeys[0])  # a power in mW is summarised in W
        mean = _finite(stored.get(f"{SUMMARY_PREFIX}{qkeys[0]}/mean"))
        peak = _finite(stored.get(f"{SUMMARY_PREFIX}{qkeys[0]}/max"))
        mean, peak = (None if x is None else x * scale for x in (mean, peak))
        # Several devices combine into one signal whose max (and, over unequal spans,
        # mean) is not a function of the per-device summaries: those need the series.
        if len(qkeys) == 1 and mean is not None and peak is not None:
            plan.quantities[q.name] = {"mean": mean, "max": peak}
            if not quantiles:
                continue
        plan.series_quantities[q.name] = qkeys
    plan.rate_keys = [k for k in ordered if k.startswith("throughput_")]
    return plan


#: the stored count of a series' readings, ``summary/<key>/<stat>``, by the names it may take
_COUNT_STATS = ("n", "count", "samples")


#: summarised quantities a sample count leaves out: the run's own GPU memory is read every
#: 5 s on a GPU the run has to itself (docs/metrics.md, "Reading paces"), a peak not a mean,
#: so 6 readings in a 30-s run are its whole pace, not a short run
_PACED = ("proc_mem_used_mib",)


def _hardware_keys(keys: list[str] | set[str]) -> list[str]:
    """The keys of ``keys`` that a summarised quantity reads (listener series) and whose
    readings a sample count judges."""
    ordered = sorted(keys)
    return sorted({k for q in QUANTITIES if q.name not in _PACED for k in _keys_for(q, ordered)})


def sample_count(keys: list[str] | set[str], stored: Mapping[str, float],
                 series: pd.DataFrame | None) -> float:
    """The fewest readings among a run's summarised hardware series ``keys``: their stored
    counts where every one has one, else counted in ``series`` (a long frame of the run);
    NaN when neither answers."""
    hardware = _hardware_keys(keys)
    if not hardware:
        # listeners watched the run (their cost is recorded) and left no such series
        ran = any(k.startswith(MONITORING_PREFIX) and k.endswith("/samples") for k in stored)
        return 0.0 if ran else float("nan")
    counts = []
    for key in hardware:
        found = next((stored[f"{SUMMARY_PREFIX}{key}/{s}"] for s in _COUNT_STATS
                      if f"{SUMMARY_PREFIX}{key}/{s}" in stored), None)
        counts.append(found)
    if all(c is not None for c in counts):
        return float(min(counts))  # type: ignore[type-var]
    held = (series[series["metric"].isin(hardware)].groupby("metric")["value"].count()
            if series is not None and not series.empty else pd.Series(dtype=float))
    # every series read (the frontend reads only what the stored summaries cannot answer)
    if len(held) == len(hardware):
        return float(held.min())
    # else the samples each listener gave the run (summary/monitoring/<listener>/samples)
    listeners = {k.split("/", 1)[0] for k in hardware}
    taken = [stored.get(monitoring_key(x, "samples")) for x in sorted(listeners)]
    return float(min(taken)) if taken and all(t is not None for t in taken) else float("nan")


def _with_samples_after_duration(table: pd.DataFrame) -> pd.DataFrame:
    if "samples" not in table or "duration_s" not in table:
        return table
    cols = [c for c in table.columns if c != "samples"]
    at = cols.index("duration_s") + 1
    return table[[*cols[:at], "samples", *cols[at:]]]


def _default_loader(uri: str) -> SeriesLoader:
    def load(run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        return load_series(run_ids, metrics=keys, tracking_uri=uri)

    return load


def summarize_runs(runs: list[str] | pd.DataFrame, tracking_uri: str | None = None,
                   series: pd.DataFrame | None = None, *, quantiles: bool = True,
                   load: SeriesLoader | None = None) -> pd.DataFrame:
    """Summaries of runs given by id or as a :func:`load_runs` frame, with their identity columns.

    A FINISHED run that has the launcher's stored summary metrics (``summary/<key>/mean``,
    ``/max``, ``summary/<listener>/<scope>/energy_j``) is summarised from those single
    values; samples are read only for what they do not answer: the ``_p95`` columns
    (``quantiles=False`` leaves them out), quantities combined over several GPUs, energy
    integrated from power, and the script's throughput history. Other runs (RUNNING, or
    recorded without summaries) are computed from their series. ``series``, when given,
    is used for every run instead; ``load`` replaces :func:`load_series` for reading.
    """
    uri = resolve_tracking_uri(tracking_uri)
    frame = runs if isinstance(runs, pd.DataFrame) else load_runs(run_ids=list(runs), tracking_uri=uri)
    ids = list(frame["run_id"])
    if not ids:
        return pd.DataFrame(columns=[*IDENTITY_COLUMNS, "duration_s", "energy_j"])
    durations = dict(zip(frame["run_id"], frame["duration_s"], strict=True))
    if series is not None:
        stats_ = _from_series(series, ids, durations, quantiles)
    else:
        stats_ = _summaries(frame, uri, quantiles, load or _default_loader(uri))
    identity = frame[[c for c in IDENTITY_COLUMNS if c in frame.columns]]
    out = identity.merge(apply_attribution(frame, stats_, uri), on="run_id", how="left")
    return _with_samples_after_duration(out)


def _from_series(series: pd.DataFrame, ids: list[str], durations: Mapping[str, float],
                 quantiles: bool) -> pd.DataFrame:
    stats_ = (summarize_series(series, durations, quantiles) if not series.empty
              else pd.DataFrame(columns=["run_id", "duration_s", "energy_j"]))
    if not series.empty:
        counts = {run_id: sample_count(set(one["metric"]), {}, one)
                  for run_id, one in series.groupby("run_id")}
        stats_["samples"] = stats_["run_id"].map(counts)
    missing = [i for i in ids if i not in set(stats_["run_id"])]
    if missing:
        filler = pd.DataFrame({"run_id": missing, "duration_s": [durations[i] for i in missing],
                               "energy_j": np.nan})
        stats_ = filler if stats_.empty else pd.concat([stats_, filler], ignore_index=True)
    return stats_


def _summaries(frame: pd.DataFrame, uri: str, quantiles: bool, load: SeriesLoader) -> pd.DataFrame:
    plans: dict[str, _StoredPlan] = {}
    needed: dict[str, list[str]] = {}
    stored_durations: dict[str, float] = {}
    found: dict[str, tuple[set[str], dict[str, float]]] = {}
    for row in frame.to_dict("records"):
        run_id = str(row["run_id"])
        keys, stored = found[run_id] = _stored_metrics(row)
        if DURATION_KEY in stored:
            stored_durations[run_id] = stored[DURATION_KEY]
        if row.get("status") == "FINISHED" and _has_stored_summaries(stored):
            plans[run_id] = _plan_from_stored(keys, stored, quantiles)
            needed[run_id] = plans[run_id].keys()
        else:  # computed from the series, as a run without stored summaries always was
            needed[run_id] = summary_metric_keys(list_metrics([run_id], tracking_uri=uri))
    rows = []
    for row in frame.to_dict("records"):
        run_id = str(row["run_id"])
        duration = _finite(row.get("duration_s"))
        if duration is None:
            duration = stored_durations.get(run_id)
        keys = needed[run_id]
        one = load([run_id], keys) if keys else None
        one = one[one["run_id"] == run_id] if one is not None else None
        has_series = one is not None and not one.empty
        plan = plans.get(run_id)
        if plan is None:
            if not has_series:
                rows.append({"run_id": run_id, "duration_s": row.get("duration_s"),
                             "energy_j": np.nan, "samples": sample_count(*found[run_id], None)})
                continue
            energy, quantities, rates = _series_parts(one, quantiles)
            rows.append({**_assemble(run_id, _series_duration(one, duration), energy, quantities, rates),
                         "samples": sample_count(set(one["metric"]), found[run_id][1], one)})
            continue
        energy, quantities, rates = (_series_parts(one, quantiles) if has_series
                                     else (float("nan"), {}, {}))
        for name, values in plan.quantities.items():
            quantities[name] = {**quantities.get(name, {}), **values}
        for name in list(quantities):
            if name not in plan.quantities and name not in plan.series_quantities:
                del quantities[name]
        if plan.energy is not None:
            energy = plan.energy
        if duration is None:
            duration = _series_duration(one, None) if has_series else float("nan")
        quantities = {name: {s: v[s] for s in ("mean", "p95", "max") if s in v}
                      for name, v in quantities.items()}
        keys, stored = found[run_id]
        rows.append({**_assemble(run_id, duration, energy, quantities, rates),
                     "samples": sample_count(keys, stored, one if has_series else None)})
    return pd.DataFrame(rows)
