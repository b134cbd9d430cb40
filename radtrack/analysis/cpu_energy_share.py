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

This is a model: a package's power is not linear in its busy time (an idle package draws
a large part of its busy power), so the split says who kept the CPUs busy, not what each
run would draw alone (docs/listeners.md "CPU and DRAM energy").

Pure: numpy arrays in, joules out; no MLflow, no store access.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

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


def split(energy: Series, runs: Mapping[str, Series], host_busy: Series | None = None) -> dict[str, float]:
    """Joules of the host's CPU-side energy per run id, plus ``other`` and ``idle``.

    ``energy``: the host's cumulative CPU-side energy (J; the sum of its package and DRAM
    counters) at its reading times; ``runs``: run id -> its process tree's CPU (% of one
    core); ``host_busy``: the host's busy CPU in % of one core (``top/cpu_pct`` x cores),
    None where unknown (the runs' CPU time then stands for it)."""
    t, e = (np.asarray(x, float) for x in energy)
    order = np.argsort(t, kind="stable")
    t, e = t[order], e[order]
    if len(t) < 2:
        return {**{r: 0.0 for r in runs}, OTHER: 0.0, IDLE: 0.0}
    delta = np.diff(e)
    used = {r: np.diff(cpu_seconds(*s, t)) for r, s in runs.items()}
    runs_total = np.sum(list(used.values()), axis=0) if used else np.zeros(len(delta))
    busy = runs_total if host_busy is None else np.maximum(np.diff(cpu_seconds(*host_busy, t)), runs_total)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {r: float(np.sum(np.where(busy > 0, delta * u / busy, 0.0))) for r, u in used.items()}
        out[OTHER] = float(np.sum(np.where(busy > 0, delta * (busy - runs_total) / busy, 0.0)))
    out[IDLE] = float(np.sum(np.where(busy > 0, 0.0, delta)))
    return out
