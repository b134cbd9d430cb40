"""Co-located runs' shares of the host's CPU-side energy (CPU packages and DRAM: the
``rapl`` listener's counters), by their processes' CPU time.

The host's CPU energy has no per-process meter. Between two readings of the host's energy
counter, the energy is split in proportion to CPU time: each run gets the CPU seconds of
its process tree (``top/proc/cpu_pct``, % of one core) over the CPU seconds every process
of the host used (``top/cpu_pct`` x cores: the host's busy time); what the runs did not
use is ``other`` (processes outside the workload, the kernel). An interval in which no
CPU time was used at all (or the host's busy time is unknown and no run used any) is
``idle``. Where a run's CPU time exceeds the host's busy time (the two are sampled apart),
the runs' sum stands for the busy time. A run's shares add up with ``other`` and
``idle`` to the host's energy: nothing is counted twice, nothing lost.

Co-location accounting applies it per 1-s window of the workload (radtrack/analysis/
attribution.py, for every device whose energy series declares scope ``host``), on the CPU
series whichever listener declares them (``proc_cpu``, ``host_cpu``: :func:`cpu_readings`);
:func:`split` applies it over the energy counter's own intervals.

This is a model: a package's power is not linear in its busy time (an idle package draws
a large part of its busy power), so the split says who kept the CPUs busy, not what each
run would draw alone (docs/listeners.md "CPU and DRAM energy").

Pure: arrays (or a run's trace frames) in, joules out; no MLflow, no store access.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radtrack.compute import stats
from radtrack.vocab import energy_sources as es

OTHER = "other"
IDLE = "idle"

Series = tuple[np.ndarray, np.ndarray]  # (times in s, values)


def cpu_seconds(t: np.ndarray, pct: np.ndarray, at: np.ndarray) -> np.ndarray:
    """CPU seconds used from the series' first reading up to each time of ``at``: the
    trapezoid integral of ``pct`` (% of one core) / 100; constant outside the series' span
    (the run was not there)."""
    t, pct = np.asarray(t, float), np.asarray(pct, float)
    keep = np.isfinite(t) & np.isfinite(pct)
    t, pct = t[keep], pct[keep]
    if len(t) == 0:
        return np.zeros(len(at))
    order = np.argsort(t, kind="stable")
    t, pct = t[order], np.clip(pct[order], 0.0, None) / 100.0
    cumulative = np.concatenate(([0.0], np.cumsum(np.diff(t) * (pct[1:] + pct[:-1]) / 2)))
    return np.interp(at, t, cumulative)


def shares(delta: np.ndarray, used: Mapping[str, np.ndarray], busy: np.ndarray | None
           ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The rule, per interval: ``delta`` the host's CPU-side joules of each interval,
    ``used`` run id -> its CPU seconds in each, ``busy`` the host's busy CPU seconds in each
    (None where unknown: the runs' sum stands for it). Returns (run id -> joules per
    interval, ``other`` joules, ``idle`` joules); in every interval they add up to
    ``delta`` (an interval of unknown energy, NaN, gives 0 to everyone)."""
    delta = np.nan_to_num(np.asarray(delta, float), nan=0.0)
    runs_total = np.sum(list(used.values()), axis=0) if used else np.zeros(len(delta))
    busy = runs_total if busy is None else np.maximum(np.nan_to_num(busy, nan=0.0), runs_total)
    on = busy > 0
    safe = np.where(on, busy, 1.0)
    parts = {r: np.where(on, delta * u / safe, 0.0) for r, u in used.items()}
    return parts, np.where(on, delta * (busy - runs_total) / safe, 0.0), np.where(on, 0.0, delta)


def split(energy: Series, runs: Mapping[str, Series], host_busy: Series | None = None) -> dict[str, float]:
    """Joules of the host's CPU-side energy per run id, plus ``other`` and ``idle``, over
    the energy counter's own intervals.

    ``energy``: the host's cumulative CPU-side energy (J; the sum of its package and DRAM
    counters) at its reading times; ``runs``: run id -> its process tree's CPU (% of one
    core); ``host_busy``: the host's busy CPU in % of one core (``top/cpu_pct`` x cores),
    None where unknown (the runs' CPU time then stands for it)."""
    t, e = (np.asarray(x, float) for x in energy)
    order = np.argsort(t, kind="stable")
    t, e = t[order], stats.stitch_counter(e[order], t[order])  # a restarted listener's lives
    if len(t) < 2:
        return {**{r: 0.0 for r in runs}, OTHER: 0.0, IDLE: 0.0}
    used = {r: np.diff(cpu_seconds(*s, t)) for r, s in runs.items()}
    busy = None if host_busy is None else np.diff(cpu_seconds(*host_busy, t))
    parts, other, idle = shares(np.diff(e), used, busy)
    out = {r: float(np.sum(p)) for r, p in parts.items()}
    out[OTHER], out[IDLE] = float(np.sum(other)), float(np.sum(idle))
    return out


def window_seconds(series: Series, edges: np.ndarray, start: float = -np.inf,
                   end: float = np.inf) -> np.ndarray:
    """CPU seconds of ``series`` (% of one core) in each window between ``edges``, counted
    inside ``start`` .. ``end`` only (a run's span: its readings' end points are held, so
    nothing outside it counts)."""
    edges = np.asarray(edges, float)
    return np.diff(cpu_seconds(*series, np.clip(edges, start, end)))


def host_busy_seconds(readings: Sequence[Series], edges: np.ndarray) -> np.ndarray | None:
    """The host's busy CPU seconds in each window from several readings of it (each
    co-located run's listener reads the same host, over its own span): per window the
    reading that covers the window most, the mean of those that cover it equally (not the
    largest value: of two noisy readings of one quantity that is biased upward); None
    without any reading."""
    found = [s for s in readings if len(s[0]) >= 2]
    if not found:
        return None
    edges = np.asarray(edges, float)
    seconds = np.vstack([window_seconds(s, edges) for s in found])
    cover = np.vstack([np.clip(np.minimum(edges[1:], np.nanmax(s[0])) -
                               np.maximum(edges[:-1], np.nanmin(s[0])), 0.0, None) for s in found])
    best = cover >= cover.max(axis=0) - 1e-9
    return np.sum(np.where(best, seconds, 0.0), axis=0) / best.sum(axis=0)


def reading_cuts(edges: np.ndarray, times: Sequence[np.ndarray]) -> np.ndarray:
    """The windows' ``edges`` cut again at every reading time inside them: the pieces
    over which the rule is applied before they are summed into their windows, so that a
    window in which the host's busy time changes (a partner's end, another job) splits
    each piece's energy by that piece's CPU time, as the counter's own readings do."""
    edges = np.asarray(edges, float)
    inside = [t[(t > edges[0]) & (t < edges[-1])] for t in (np.asarray(x, float) for x in times)]
    return np.unique(np.concatenate([edges, *inside]))


def shares_in_windows(energy: np.ndarray, used: Mapping[str, np.ndarray], busy: np.ndarray | None,
                      cuts: np.ndarray, edges: np.ndarray) -> tuple[
        dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
    """:func:`shares` applied per piece between ``cuts`` (:func:`reading_cuts`), then summed
    into the windows between ``edges``: (run -> joules, ``other``, ``idle``, run -> CPU
    seconds, the host's busy seconds or None), each per window."""
    starts = np.searchsorted(cuts, np.asarray(edges, float)[:-1])

    def into(pieces: np.ndarray) -> np.ndarray:
        return np.add.reduceat(np.asarray(pieces, float), starts)

    parts, other, idle = shares(energy, used, busy)
    return ({r: into(v) for r, v in parts.items()}, into(other), into(idle),
            {r: into(v) for r, v in used.items()}, None if busy is None else into(busy))


# -- the inputs, from a run's traces (listener -> wide frame with a ``time`` column, s) -----

PROC_CPU = "proc_cpu_pct"  # the run's process tree, % of one core
HOST_CPU = "host_busy_pct"  # the host's busy CPU, % of one core (all cores: x cores)


def _column(frames: Mapping[str, pd.DataFrame], keys: Sequence[str]) -> pd.DataFrame | None:
    frame = frames.get(keys[0].split("/", 1)[0]) if keys else None
    if frame is None or "time" not in frame.columns or not set(keys) <= set(frame.columns):
        return None
    return frame[["time", *keys]]


def cpu_readings(frames: Mapping[str, pd.DataFrame]) -> dict[str, Series]:
    """What the split reads of one run's traces, from whichever listener declares it
    (radtrack/vocab/energy_sources.py ``cpu_time_keys``): :data:`PROC_CPU` and
    :data:`HOST_CPU` (the host's all-cores figure times its cores where both are read,
    else the sum of its cores), each as (unix s, values); a missing one is left out."""
    keys = es.cpu_time_keys(str(c) for f in frames.values() for c in f.columns
                            if c not in ("time", "step"))
    out: dict[str, Series] = {}
    if keys.proc and (part := _column(frames, [keys.proc])) is not None:
        part = part.dropna()
        out[PROC_CPU] = part["time"].to_numpy(float), part[keys.proc].to_numpy(float)
    if keys.host and keys.cores and (part := _column(frames, [keys.host])) is not None:
        part = part.dropna()
        out[HOST_CPU] = (part["time"].to_numpy(float),
                         part[keys.host].to_numpy(float) * len(keys.cores))
    elif keys.cores and (part := _column(frames, list(keys.cores))) is not None:
        part = part.dropna()
        out[HOST_CPU] = part["time"].to_numpy(float), part[list(keys.cores)].to_numpy(float).sum(axis=1)
    return {k: v for k, v in out.items() if len(v[0])}


def host_devices(frames: Mapping[str, pd.DataFrame]) -> set[str]:
    """The devices of the traces whose energy is the host's CPU side (scope ``host``:
    CPU packages, DRAM), as energy_sources chooses them."""
    keys = {str(c) for f in frames.values() for c in f.columns if c not in ("time", "step")}
    return {d for d, s in es.energy_sources(keys).items() if s.scope == "host"}


def mark_host_uses(uses: Mapping[str, Any], frames: Mapping[str, pd.DataFrame]) -> None:
    """Mark a run's uses (radtrack/compute/gpu_uses.py ``run_uses``: scope -> GpuUse) of
    the host's CPU-side devices as such and give them the run's CPU readings, so that
    co-location accounting splits them by CPU time (radtrack/compute/attribution.py)."""
    host = host_devices(frames) & set(uses)
    if not host:
        return
    cpu = cpu_readings(frames)
    for scope in host:
        uses[scope].host = True
        uses[scope].readings = {**uses[scope].readings, **cpu}
