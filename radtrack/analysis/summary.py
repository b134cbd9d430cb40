"""Per-run summaries: duration, energy, time-weighted power/utilisation/memory/clocks, throughput.

Pure functions on the long series frames of :func:`radtrack.analysis.data.load_series`
(columns run_id, metric, seconds, value), plus :func:`summarize_runs` which loads what it
needs. Statistics are time-weighted (trapezoid rule) so uneven sampling does not bias
them; energy comes from a hardware energy counter when one was recorded (Zeus-style:
the counter is exact, integrated sampled power is an estimate) and from integrated
power otherwise: the driver's 1-s average power where the GPU reports it (it integrated
to within 0.2 % of the H100's counter in every benchmark run, bursty loads included),
else the instantaneous reading (0.15 % off under a steady load, 1-4 % under a bursty
one: docs/performance.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from radtrack import stats
from radtrack.analysis.data import (
    SUMMARY_PREFIX,
    list_metrics,
    load_runs,
    load_series,
    resolve_tracking_uri,
)

# Preferred source first: when several listeners measure the same GPU, only the first one
# that has the reading is used, so two listeners never double-count one device.
GPU_LISTENERS = ("smi", "dcgm")


@dataclass(frozen=True)
class Quantity:
    """A reading summarised per run, found by metric-name pattern."""

    name: str  # column prefix in the summary, e.g. "power_w"
    pattern: str  # regex on metric keys; group "listener" picks the source
    combine: str  # across devices: "sum" (additive: power, memory) or "mean" (util, temps)


QUANTITIES = (
    Quantity("power_w", r"(?P<listener>smi|dcgm)/gpu\d+/power_w", "sum"),
    Quantity("gpu_util_pct", r"(?P<listener>smi|dcgm)/gpu\d+/gpu_util_pct", "mean"),
    Quantity("sm_active_pct", r"(?P<listener>dcgm|smi)/gpu\d+/sm_active_pct", "mean"),
    Quantity("tensor_active_pct", r"(?P<listener>dcgm|smi)/gpu\d+/tensor_active_pct", "mean"),
    Quantity("mem_used_mib", r"(?P<listener>smi|dcgm)/gpu\d+/mem_used_mib", "sum"),
    Quantity("temp_c", r"(?P<listener>smi|dcgm)/gpu\d+/(?:gpu_)?temp_c", "mean"),
    Quantity("sm_clock_mhz", r"(?P<listener>smi|dcgm)/gpu\d+/sm_clock_mhz", "mean"),
    # What the run's own processes use on a shared GPU (smi's per-process readings).
    Quantity("proc_sm_util_pct", r"(?P<listener>smi)/gpu\d+/proc_sm_util_pct", "sum"),
    Quantity("proc_mem_used_mib", r"(?P<listener>smi)/gpu\d+/proc_mem_used_mib", "sum"),
    Quantity("cpu_pct", r"(?P<listener>top)/cpu_pct", "mean"),
    Quantity("proc_cpu_pct", r"(?P<listener>top)/proc/cpu_pct", "sum"),
    Quantity("rss_mib", r"(?P<listener>top)/proc/rss_mib", "sum"),
)
_ENERGY_RE = re.compile(r"(?P<listener>[^/]+)/(?P<scope>gpu\d+)/energy_j")
_POWER_RE = re.compile(r"(?P<listener>[^/]+)/(?P<scope>gpu\d+)/power_w")
_POWER_AVG_RE = re.compile(r"(?P<listener>[^/]+)/(?P<scope>gpu\d+)/power_avg_w")
# energy sources of one GPU, best first
_ENERGY_SOURCES = (("counter", _ENERGY_RE), ("avg", _POWER_AVG_RE), ("power", _POWER_RE))
_RATE_RE = re.compile(r"throughput_(?P<unit>[A-Za-z0-9]+)_per_s")
_FLOPS_RE = re.compile(r"throughput_(?P<prefix>[kmgtpe]?)flops", re.IGNORECASE)


# Pure numeric helpers -------------------------------------------------------------------

def _clean(t: np.ndarray | pd.Series, v: np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    ok = ~(np.isnan(t) | np.isnan(v))
    t, v = t[ok], v[ok]
    order = np.argsort(t, kind="stable")
    return t[order], v[order]


def time_weighted_mean(t: np.ndarray | pd.Series, v: np.ndarray | pd.Series) -> float:
    """Mean of the piecewise-linear signal through the samples (trapezoid); one sample: itself.

    The sink's ``summary/<key>/mean`` uses the same definition (radtrack.stats), so the
    two always agree; samples are sorted by time first because history may arrive unsorted.
    """
    return stats.time_weighted_mean(*_clean(t, v))


def integrate_energy(t: np.ndarray | pd.Series, watts: np.ndarray | pd.Series) -> float:
    """Joules from power samples (W) at times ``t`` (s), trapezoid rule; NaN under two samples."""
    return stats.integrate(*_clean(t, watts))


def counter_energy(values: np.ndarray | pd.Series) -> float:
    """Joules from a cumulative energy counter (J): last minus first reading."""
    return stats.counter_delta(values)


def time_weighted_quantile(t: np.ndarray | pd.Series, v: np.ndarray | pd.Series, q: float) -> float:
    """Quantile where each sample weighs the time it represents (half the gap to each neighbour)."""
    t, v = _clean(t, v)
    if len(v) == 0:
        return float("nan")
    if len(v) == 1 or t[-1] <= t[0]:
        return float(np.quantile(v, q))
    gaps = np.diff(t)
    weights = np.concatenate(([gaps[0] / 2], (gaps[:-1] + gaps[1:]) / 2, [gaps[-1] / 2]))
    order = np.argsort(v, kind="stable")
    cumulative = np.cumsum(weights[order])
    idx = int(np.searchsorted(cumulative, q * cumulative[-1], side="left"))
    return float(v[order][min(idx, len(v) - 1)])


def coefficient_of_variation(values: np.ndarray | pd.Series) -> float:
    """Sample standard deviation over mean; NaN with fewer than two values or a zero mean."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2 or v.mean() == 0:
        return float("nan")
    return float(v.std(ddof=1) / v.mean())


# Series-level helpers -------------------------------------------------------------------

def _metric(series: pd.DataFrame, metric: str) -> pd.DataFrame:
    return series[series["metric"] == metric]


def windowed_mean(series: pd.DataFrame, metric: str, start_s: float = 0.0,
                  end_s: float = float("inf")) -> pd.Series:
    """Time-weighted mean of ``metric`` per run between ``start_s`` and ``end_s`` (run seconds).

    The signal is interpolated at the window edges, so a window that falls between samples
    is still weighted exactly. NaN for a run without samples in the window.
    """
    if end_s <= start_s:
        raise ValueError(f"windowed_mean: window end {end_s} s must be after its start {start_s} s")
    out = {}
    for run_id, one in _metric(series, metric).groupby("run_id", sort=True):
        t, v = _clean(one["seconds"], one["value"])
        inside = (t >= start_s) & (t <= end_s)
        edges_t, edges_v = [], []
        for edge in (start_s, end_s):
            if len(t) and t[0] < edge < t[-1]:
                edges_t.append(edge)
                edges_v.append(float(np.interp(edge, t, v)))
        wt = np.concatenate((t[inside], edges_t))
        wv = np.concatenate((v[inside], edges_v))
        out[run_id] = time_weighted_mean(wt, wv)
    return pd.Series(out, name=f"{metric} [{start_s:g}, {end_s:g}] s", dtype=float)


def _keys_for(quantity: Quantity, keys: list[str]) -> list[str]:
    matches = [(m.group("listener"), k) for k in keys
               if (m := re.fullmatch(quantity.pattern, k))]
    if not matches:
        return []
    listeners = [m[0] for m in matches]
    preferred = next(x for x in (*GPU_LISTENERS, *listeners) if x in listeners)
    return sorted(k for lst, k in matches if lst == preferred)


def _combined(one_run: pd.DataFrame, keys: list[str], how: str) -> tuple[np.ndarray, np.ndarray]:
    """One signal out of several devices' series: each interpolated on the union of their times."""
    parts = [_clean(*_metric(one_run, k)[["seconds", "value"]].T.to_numpy()) for k in keys]
    parts = [p for p in parts if len(p[0])]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.array([]), np.array([])
    grid = np.unique(np.concatenate([p[0] for p in parts]))
    # Outside a device's own sampled span it has no reading: do not extrapolate it.
    stacked = np.vstack([np.where((grid >= t[0]) & (grid <= t[-1]), np.interp(grid, t, v), np.nan)
                         for t, v in parts])
    with np.errstate(invalid="ignore"):
        values = np.nansum(stacked, axis=0) if how == "sum" else np.nanmean(stacked, axis=0)
    return grid, values


def run_energy(one_run: pd.DataFrame) -> float:
    """Joules over the run's devices: each GPU's energy counter, else its integrated 1-s
    average power, else its integrated instantaneous power."""
    keys = list(one_run["metric"].unique())
    by_scope: dict[str, dict[str, dict[str, str]]] = {}
    for key in keys:
        for kind, rx in _ENERGY_SOURCES:
            if m := rx.fullmatch(key):
                by_scope.setdefault(m.group("scope"), {}).setdefault(kind, {})[m.group("listener")] = key
    if not by_scope:
        return float("nan")
    total = 0.0
    for readings in by_scope.values():
        joules = float("nan")
        for kind, _ in _ENERGY_SOURCES:
            sources = readings.get(kind, {})
            for listener in (*GPU_LISTENERS, *sorted(sources)):
                if listener in sources:
                    one = _metric(one_run, sources[listener])
                    joules = (counter_energy(one.sort_values("seconds")["value"]) if kind == "counter"
                              else integrate_energy(one["seconds"], one["value"]))
                    break
            if not np.isnan(joules):
                break
        if np.isnan(joules):
            return float("nan")
        total += joules
    return total


def work_unit(key: str) -> str | None:
    """The unit of work a throughput metric counts per second, or None when it is not a rate.

    ``throughput_samples_per_s`` -> ``sample``, ``throughput_tflops`` -> ``tflop``.
    """
    if m := _RATE_RE.fullmatch(key):
        unit = m.group("unit")
        return unit[:-1] if unit.endswith("s") and len(unit) > 1 else unit
    if m := _FLOPS_RE.fullmatch(key):
        return f"{m.group('prefix')}flop"
    return None


def _quantity_stats(t: np.ndarray, v: np.ndarray, quantiles: bool) -> dict[str, float]:
    stats_ = {"mean": time_weighted_mean(t, v)}
    if quantiles:
        stats_["p95"] = time_weighted_quantile(t, v, 0.95)
    stats_["max"] = float(np.nanmax(v)) if len(v) else float("nan")
    return stats_


def _assemble(run_id: str, duration: float, energy: float,
              quantities: Mapping[str, Mapping[str, float]], rates: Mapping[str, float]
              ) -> dict[str, object]:
    """A summary row in the canonical column order, energy per unit of work included."""
    row: dict[str, object] = {"run_id": run_id, "duration_s": duration, "energy_j": energy}
    for q in QUANTITIES:
        for stat, value in quantities.get(q.name, {}).items():
            row[f"{q.name}_{stat}"] = value
    for key in sorted(rates):
        rate = rates[key]
        row[f"{key}_mean"] = rate
        unit = work_unit(key)
        if unit is not None and rate * duration > 0 and not np.isnan(energy):
            row[f"energy_per_{unit}_j"] = energy / (rate * duration)
    return row


def _series_duration(one: pd.DataFrame, duration: float | None) -> float:
    if duration is None or np.isnan(duration):
        return float(one["seconds"].max() - min(one["seconds"].min(), 0.0))
    return float(duration)


def _series_parts(one: pd.DataFrame, quantiles: bool
                  ) -> tuple[float, dict[str, dict[str, float]], dict[str, float]]:
    """Energy, per-quantity statistics and throughput rates of one run's long series."""
    keys = sorted(one["metric"].unique())
    quantities = {}
    for q in QUANTITIES:
        qkeys = _keys_for(q, keys)
        if qkeys:
            quantities[q.name] = _quantity_stats(*_combined(one, qkeys, q.combine), quantiles)
    rates = {key: float(_metric(one, key)["value"].mean()) for key in keys
             if key.startswith("throughput_")}
    return run_energy(one), quantities, rates


def summarize_series(series: pd.DataFrame, durations: Mapping[str, float] | None = None,
                     quantiles: bool = True) -> pd.DataFrame:
    """One row per run of ``series``: duration_s, energy_j, <quantity>_mean/_p95/_max,
    <throughput key>_mean and energy_per_<unit>_j (energy over mean throughput x duration,
    for throughputs that are rates: ``throughput_<unit>s_per_s``, ``throughput_<prefix>flops``).

    ``durations`` (run id -> seconds) overrides the span of the run's samples;
    ``quantiles=False`` leaves the ``_p95`` columns out.
    """
    rows = []
    for run_id, one in series.groupby("run_id", sort=False):
        duration = _series_duration(one, (durations or {}).get(run_id))
        energy, quantities, rates = _series_parts(one, quantiles)
        rows.append(_assemble(str(run_id), duration, energy, quantities, rates))
    if not rows:
        return pd.DataFrame(columns=["run_id", "duration_s", "energy_j"])
    return pd.DataFrame(rows)


def summary_metric_keys(keys: list[str]) -> list[str]:
    """The metric keys :func:`summarize_series` uses, out of ``keys``."""
    wanted = set()
    for q in QUANTITIES:
        wanted.update(k for k in keys if re.fullmatch(q.pattern, k))
    wanted.update(k for k in keys if any(rx.fullmatch(k) for _, rx in _ENERGY_SOURCES)
                  or k.startswith("throughput_"))
    return sorted(wanted)


IDENTITY_COLUMNS = ["run_id", "run_name", "workload", "letter", "status", "file", "devices",
                    "collocation"]

#: (run ids, metric keys) -> the long series frame of load_series; the frontend passes its cache
SeriesLoader = Callable[[list[str], list[str]], pd.DataFrame]
_STORED_STATS = ("mean", "min", "max")
_METRIC_COLUMN = "metric."


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
        if key.startswith(SUMMARY_PREFIX):
            stored[key] = number
        else:
            keys.add(key)
    # A key whose latest logged value was NaN still has its stored summary.
    for key in stored:
        base, _, stat = key[len(SUMMARY_PREFIX):].rpartition("/")
        if stat in _STORED_STATS and base:
            keys.add(base)
        elif _ENERGY_RE.fullmatch(key[len(SUMMARY_PREFIX):]):
            keys.add(key[len(SUMMARY_PREFIX):])
    return keys, stored


def _has_stored_summaries(stored: Mapping[str, float]) -> bool:
    return any(k.endswith(("/mean", "/energy_j")) for k in stored)


def _plan_from_stored(keys: set[str], stored: Mapping[str, float], quantiles: bool) -> _StoredPlan:
    """Use the sink's ``summary/<key>/mean|max`` and ``summary/<l>/<scope>/energy_j``
    wherever they mean exactly what the series path computes (radtrack/sink.py
    ``summarize``: the same trapezoid mean, the counter's last minus first reading)."""
    plan = _StoredPlan()
    ordered = sorted(keys)
    # Energy: per GPU, the counter of the preferred listener, else integrated power.
    by_scope: dict[str, dict[str, dict[str, str]]] = {}
    for key in ordered:
        for kind, rx in _ENERGY_SOURCES:
            if m := rx.fullmatch(key):
                by_scope.setdefault(m.group("scope"), {}).setdefault(kind, {})[m.group("listener")] = key
                plan.energy_keys.append(key)
    if by_scope:
        total = 0.0
        for readings in by_scope.values():
            counters = readings.get("counter", {})
            listener = next((x for x in (*GPU_LISTENERS, *sorted(counters)) if x in counters), None)
            # the sink stores no energy for a counter with fewer than two readings: then
            # the series path decides (it falls back to integrated power)
            value = _finite(stored.get(f"{SUMMARY_PREFIX}{counters[listener]}")) if listener else None
            if value is None:
                total = float("nan")
                break
            total += value
        plan.energy = None if np.isnan(total) else total
    else:
        plan.energy = float("nan")
    for q in QUANTITIES:
        qkeys = _keys_for(q, ordered)
        if not qkeys:
            continue
        mean = _finite(stored.get(f"{SUMMARY_PREFIX}{qkeys[0]}/mean"))
        peak = _finite(stored.get(f"{SUMMARY_PREFIX}{qkeys[0]}/max"))
        # Several devices combine into one signal whose max (and, over unequal spans,
        # mean) is not a function of the per-device summaries: those need the series.
        if len(qkeys) == 1 and mean is not None and peak is not None:
            plan.quantities[q.name] = {"mean": mean, "max": peak}
            if not quantiles:
                continue
        plan.series_quantities[q.name] = qkeys
    plan.rate_keys = [k for k in ordered if k.startswith("throughput_")]
    return plan


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
    return identity.merge(stats_, on="run_id", how="left")


def _from_series(series: pd.DataFrame, ids: list[str], durations: Mapping[str, float],
                 quantiles: bool) -> pd.DataFrame:
    stats_ = (summarize_series(series, durations, quantiles) if not series.empty
              else pd.DataFrame(columns=["run_id", "duration_s", "energy_j"]))
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
    for row in frame.to_dict("records"):
        run_id = str(row["run_id"])
        keys, stored = _stored_metrics(row)
        if "summary/duration_s" in stored:
            stored_durations[run_id] = stored["summary/duration_s"]
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
                             "energy_j": np.nan})
                continue
            energy, quantities, rates = _series_parts(one, quantiles)
            rows.append(_assemble(run_id, _series_duration(one, duration), energy, quantities, rates))
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
        rows.append(_assemble(run_id, duration, energy, quantities, rates))
    return pd.DataFrame(rows)
