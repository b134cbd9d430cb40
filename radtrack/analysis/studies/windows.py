"""What the studies share: their runs and series, steady-state windows, window statistics.

**Steady state** of a run is the span between the first and the last point at which the
script logged its throughput (``throughput_*``): the bundled workloads log one point at
the end of each timed block, so the window starts after start-up, warm-up and the first
block (cuDNN autotuning, allocator growth) and ends with the last complete block. A run
with fewer than two such points uses 20 % to 90 % of its samples' span instead.
Several runs sharing a GPU are in steady state together where their windows overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from radtrack.analysis.data import list_metrics, load_runs, load_series, resolve_tracking_uri
from radtrack.compute.summary import time_weighted_mean
from radtrack.errors import RadtrackError
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.meaning import ROLES, describe

FALLBACK = (0.2, 0.9)


def study_runs(experiment: str, workload: int | None, tracking_uri: str | None,
               study: str) -> pd.DataFrame:
    """The row runs of ``experiment`` (one workload of it), FINISHED first; RadtrackError
    when there are none."""
    uri = resolve_tracking_uri(tracking_uri)
    runs = load_runs(experiment, workload=workload, tracking_uri=uri)
    if runs.empty:
        where = f"workload {workload} of " if workload is not None else ""
        raise RadtrackError(f"{where}experiment {experiment!r} has no runs for study {study}")
    runs = runs.copy()
    runs["script"] = [Path(str(f)).stem if isinstance(f, str) else "-" for f in runs["file"]]
    return runs


def study_series(runs: pd.DataFrame, wanted: Iterable[str], tracking_uri: str | None,
                 roles: Iterable[str] = ()) -> pd.DataFrame:
    """Long series of the keys in ``wanted`` (regexes), and of the listener series whose
    declared role is one of ``roles``, that the runs have; adds ``t`` (unix seconds, float)
    for windows across runs."""
    uri = resolve_tracking_uri(tracking_uri)
    patterns = [re.compile(p) for p in wanted]
    roles = tuple(roles)
    ids = list(runs["run_id"])
    keys = [k for k in list_metrics(ids, tracking_uri=uri) if any(p.fullmatch(k) for p in patterns)
            or (roles and listener_series(k) and describe(k).role in roles)]
    if not keys:
        from radtrack.analysis.data import _empty_series

        frame = _empty_series()
    else:
        frame = load_series(ids, metrics=keys, tracking_uri=uri)
    frame = frame.assign(t=frame["time"].astype("int64").astype(float) / 1e9
                         if len(frame) else pd.Series(dtype=float))
    return frame


def listener_series(key: str) -> bool:
    """A listener's series (declared by it, or of a listener's key shape), not radtrack's
    own figures (summaries, attribution, code windows) or the script's metrics."""
    if key.startswith((schema.SUMMARY_PREFIX, schema.ATTRIBUTION_PREFIX, schema.WINDOW_PREFIX)):
        return False
    return describe(key).declared


def gpu_key(keys: Iterable[str], scope: str, quantity: str) -> str | None:
    """The key of ``quantity`` on GPU ``scope`` (``gpu0``) from the listener of the highest
    declared priority that reads it (radtrack/vocab/energy_sources.py ``find``)."""
    return es.find(list(keys), scope, quantity, *ROLES)


def gpu_scopes(keys: Iterable[str]) -> list[str]:
    """The GPUs (``gpu<i>``) a listener declares readings of (scope device)."""
    found = {d for d in es.devices_with(list(keys), *ROLES, scope="device") if re.fullmatch(r"gpu\d+", d)}
    return sorted(found, key=lambda s: int(s[3:]))


def throughput_key(keys: Iterable[str]) -> str | None:
    """The run's throughput metric: samples/s first, else the first one in name order."""
    rates = sorted(k for k in keys if k.startswith("throughput_"))
    if "throughput_samples_per_s" in rates:
        return "throughput_samples_per_s"
    return rates[0] if rates else None


def steady_window(one_run: pd.DataFrame) -> tuple[float, float, str]:
    """(start, end) of a run's steady state in unix seconds, and how it was found."""
    key = throughput_key(one_run["metric"].unique())
    if key is not None:
        t = one_run.loc[one_run["metric"] == key, "t"].to_numpy(float)
        if len(t) >= 2 and t.max() > t.min():
            return float(t.min()), float(t.max()), "throughput blocks"
    if one_run.empty:
        return float("nan"), float("nan"), "no samples"
    lo, hi = float(one_run["t"].min()), float(one_run["t"].max())
    return lo + FALLBACK[0] * (hi - lo), lo + FALLBACK[1] * (hi - lo), "20-90 % of the run"


def overlap(windows: list[tuple[float, float]]) -> tuple[float, float]:
    """The span every window covers; their union when they do not overlap."""
    start, end = max(w[0] for w in windows), min(w[1] for w in windows)
    if end > start:
        return start, end
    return min(w[0] for w in windows), max(w[1] for w in windows)


def _inside(t: np.ndarray, v: np.ndarray, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """Samples in [start, end] plus the signal interpolated at the edges."""
    ok = ~np.isnan(v)
    t, v = t[ok], v[ok]
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    keep = (t >= start) & (t <= end)
    wt, wv = list(t[keep]), list(v[keep])
    for edge in (start, end):
        if len(t) and t[0] < edge < t[-1] and edge not in wt:
            wt.append(edge)
            wv.append(float(np.interp(edge, t, v)))
    order = np.argsort(wt, kind="stable")
    return np.asarray(wt, float)[order], np.asarray(wv, float)[order]


def window_stats(t: np.ndarray, v: np.ndarray, start: float, end: float) -> dict[str, float]:
    """Time-weighted mean, coefficient of variation and 5th/95th percentiles of a signal
    in [start, end]: each sample weighs half the gap to each neighbour."""
    wt, wv = _inside(np.asarray(t, float), np.asarray(v, float), start, end)
    nan = float("nan")
    if len(wv) == 0:
        return {"mean": nan, "cv": nan, "p5": nan, "p95": nan}
    if len(wv) == 1 or wt[-1] <= wt[0]:
        weights = np.ones(len(wv))
    else:
        gaps = np.diff(wt)
        weights = np.concatenate(([gaps[0] / 2], (gaps[:-1] + gaps[1:]) / 2, [gaps[-1] / 2]))
    mean = time_weighted_mean(wt, wv)
    std = float(np.sqrt(np.average((wv - np.average(wv, weights=weights)) ** 2, weights=weights)))
    return {"mean": mean, "cv": std / mean if mean else nan,
            "p5": _quantile(wv, weights, 0.05), "p95": _quantile(wv, weights, 0.95)}


def _quantile(v: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(v, kind="stable")
    cumulative = np.cumsum(weights[order])
    idx = int(np.searchsorted(cumulative, q * cumulative[-1], side="left"))
    return float(v[order][min(idx, len(v) - 1)])


def window_mean(one_run: pd.DataFrame, key: str | None, start: float, end: float) -> float:
    if key is None:
        return float("nan")
    one = one_run[one_run["metric"] == key]
    return window_stats(one["t"].to_numpy(float), one["value"].to_numpy(float), start, end)["mean"]


def logged_mean(one_run: pd.DataFrame, key: str | None, start: float, end: float) -> float:
    """Plain mean of a script's logged points in [start, end] (throughput: one per block,
    each already a rate over its block)."""
    if key is None:
        return float("nan")
    one = one_run[(one_run["metric"] == key) & (one_run["t"] >= start - 1e-6)
                  & (one_run["t"] <= end + 1e-6)]
    # the first logged point ends the first block, which includes warm-up effects
    values = one.sort_values("t")["value"].to_numpy(float)
    if len(values) > 1:
        values = values[1:]
    return float(np.mean(values)) if len(values) else float("nan")


def param(row: pd.Series, name: str, default: str = "-") -> str:
    value = row.get(f"param.{name}")
    return default if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def tag(row: pd.Series, name: str, default: str = "-") -> str:
    value = row.get(f"tag.{name}")
    return default if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
