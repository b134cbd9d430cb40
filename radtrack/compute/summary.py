"""Per-run summaries: duration, energy, time-weighted power/utilisation/memory/clocks, throughput.

Pure functions on the long series frames of :func:`radtrack.analysis.data.load_series`
(columns run_id, metric, seconds, value); radtrack/analysis/run_summaries.py summarises
stored runs with them. Statistics are time-weighted (trapezoid rule) so uneven sampling does not bias
them; energy comes from a hardware energy counter when one was recorded (Zeus-style:
the counter is exact, integrated sampled power is an estimate) and from integrated
power otherwise: the driver's 1-s average power where the GPU reports it (it integrated
to within 0.2 % of the H100's counter in every benchmark run, bursty loads included),
else the instantaneous reading (0.15 % off under a steady load, 1-4 % under a bursty
one: docs/performance.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from radtrack.compute import stats
from radtrack.compute.energy_sums import series_energy
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe

#: radtrack's own figures stored beside the listeners' series (never a run's reading)
_OWN_FIGURES = (schema.SUMMARY_PREFIX, schema.ATTRIBUTION_PREFIX, schema.WINDOW_PREFIX)


@dataclass(frozen=True)
class Quantity:
    """A reading summarised per run, found by its declared role and its name (the key's
    last part), whatever listener reads it (radtrack/vocab/energy_sources.py)."""

    name: str  # column prefix in the summary, e.g. "power_w"
    roles: tuple[str, ...]  # vocab.series.ROLES a series must declare
    quantities: tuple[str, ...]  # the key's last part, e.g. ("power_w",); () = any
    combine: str  # across devices: "sum" (additive: power, memory) or "mean" (util, temps)
    scope: str = "device"  # the series' declared scope
    per_device: bool = True  # one listener's series per device (priority), else every key

    def selects(self, key: str) -> bool:
        """Whether ``key`` is a series of this quantity (by its declared role and scope)."""
        m = describe(key)
        if m.stat:
            return False
        if self.name == "power_w":
            return (found := es.source(key)) is not None and found.kind in ("power", "average")
        return (key.rsplit("/", 1)[-1] in self.quantities and m.role in self.roles
                and m.scope == self.scope)


QUANTITIES = (
    # a device's whole power, instantaneous (a 1-s average where that is all it reports)
    Quantity("power_w", ("device_power",), (), "sum"),
    Quantity("gpu_util_pct", ("utilisation",), ("gpu_util_pct",), "mean"),
    Quantity("sm_active_pct", ("utilisation",), ("sm_active_pct",), "mean"),
    Quantity("tensor_active_pct", ("utilisation",), ("tensor_active_pct",), "mean"),
    Quantity("mem_used_mib", ("memory",), ("mem_used_mib",), "sum"),
    Quantity("temp_c", ("temperature",), ("temp_c", "gpu_temp_c"), "mean"),
    Quantity("sm_clock_mhz", ("clock",), ("sm_clock_mhz",), "mean"),
    # What the run's own processes use on a shared GPU (per-process readings).
    Quantity("proc_sm_util_pct", ("proc_share",), ("proc_sm_util_pct",), "sum", "device_share"),
    Quantity("proc_mem_used_mib", ("memory",), ("proc_mem_used_mib",), "sum", "device_share"),
    Quantity("cpu_pct", ("host_cpu",), ("cpu_pct",), "mean", "host", per_device=False),
    Quantity("proc_cpu_pct", ("proc_cpu",), ("cpu_pct",), "sum", "run", per_device=False),
    Quantity("rss_mib", ("memory",), ("rss_mib",), "sum", "run", per_device=False),
)
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

    The sink's ``summary/<key>/mean`` uses the same definition (radtrack.compute.stats), so the
    two always agree; samples are sorted by time first because history may arrive unsorted.
    """
    return stats.time_weighted_mean(*_clean(t, v))


def integrate_energy(t: np.ndarray | pd.Series, watts: np.ndarray | pd.Series) -> float:
    """Joules from power samples (W) at times ``t`` (s), trapezoid rule; NaN under two samples."""
    return stats.integrate(*_clean(t, watts))


def counter_energy(values: np.ndarray | pd.Series, t: np.ndarray | pd.Series | None = None) -> float:
    """Joules from a cumulative energy counter (J): its increase summed over its lives (a
    restarted listener counts from 0 again; with times ``t``, the gaps bridged:
    stats.counter_delta)."""
    return stats.counter_delta(np.asarray(values, dtype=float),
                               None if t is None else np.asarray(t, dtype=float))


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
    out = {run_id: mean_between(one["seconds"], one["value"], start_s, end_s)
           for run_id, one in _metric(series, metric).groupby("run_id", sort=True)}
    return pd.Series(out, name=f"{metric} [{start_s:g}, {end_s:g}] s", dtype=float)


def mean_between(t: np.ndarray | pd.Series, v: np.ndarray | pd.Series, start: float,
                 end: float) -> float:
    """Time-weighted mean of the samples between ``start`` and ``end``, the signal
    interpolated at the edges; NaN without samples there."""
    t, v = _clean(t, v)
    inside = (t >= start) & (t <= end)
    edges_t, edges_v = [], []
    for edge in (start, end):
        if len(t) and t[0] < edge < t[-1]:
            edges_t.append(edge)
            edges_v.append(float(np.interp(edge, t, v)))
    return time_weighted_mean(np.concatenate((t[inside], edges_t)), np.concatenate((v[inside], edges_v)))


def _keys_for(quantity: Quantity, keys: list[str]) -> list[str]:
    """The series ``quantity`` summarises, by declared role: one per device (the
    highest-priority listener's), or every matching key where it is not per device. Only
    listeners' series: radtrack's own figures (a code window's ``window/<name>/gpu_util_pct``,
    summaries, attribution) share roles with them but are never a run's reading."""
    keys = [k for k in keys if not k.startswith(_OWN_FIGURES)]
    if quantity.name == "power_w":
        found = (es.power_source(keys, d) for d in es.devices_with(keys, "device_power", scope="device"))
        return sorted(s.key for s in found if s is not None)
    matches = [k for k in keys if "/" in k and quantity.selects(k)]
    if not quantity.per_device:
        return sorted(matches)
    out: dict[str, str] = {}
    for device in sorted({es.device_of(k) for k in matches}):
        for name in quantity.quantities:  # the first of the quantity's names the device has
            if (key := es.find(matches, device, name, *quantity.roles)) is not None:
                out.setdefault(device, key)
    return sorted(out.values())


def _scale(key: str) -> float:
    """The factor to a quantity's unit: a power series in mW or kW to W."""
    found = es.source(key)
    return found.scale if found is not None and not found.cumulative else 1.0


def _combined(one_run: pd.DataFrame, keys: list[str], how: str) -> tuple[np.ndarray, np.ndarray]:
    """One signal out of several devices' series (power in W whatever its unit): each
    interpolated on the union of their times."""
    parts = [(t, v * _scale(k)) for k in keys
             for t, v in [_clean(*_metric(one_run, k)[["seconds", "value"]].T.to_numpy())]]
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
    """Joules over the run's devices (GPUs, boards, the host's CPU side): each one's energy
    counter, else its integrated interval-average power, else its integrated instantaneous
    power, by declared role (radtrack/vocab/energy_sources.py); NaN without a source or
    where one device's energy cannot be told."""
    parts = device_energy(one_run)
    if not parts or any(np.isnan(v) for v in parts.values()):
        return float("nan")
    return float(sum(parts.values()))


def device_energy(one_run: pd.DataFrame) -> dict[str, float]:
    """device -> joules over one run's long series, from its best source."""
    out = {}
    for device, src in es.energy_sources(one_run["metric"].unique()).items():
        one = _metric(one_run, src.key).sort_values("seconds", kind="stable")
        out[device] = series_energy(src, one["seconds"].to_numpy(), one["value"].to_numpy())
    return out


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
        wanted.update(_keys_for(q, keys))
    wanted.update(s.key for s in es.energy_sources(keys).values())
    wanted.update(k for k in keys if k.startswith("throughput_"))
    return sorted(wanted)
