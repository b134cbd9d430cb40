"""The co-located split by solo baselines (``solo-model``) and every split's 95 % bound.

Why: under MPS the driver reports SM time only for the MPS server (nvmlDeviceGetProcessUtilization
and nvmlDeviceGetProcessesUtilizationInfo list the server's pid at 100 % on an H200, driver
580.159.04), and under time-slicing its per-process samples split identical twins 5-40 %
apart (benchmarks/results/h200-2026-11-29-attribution). Neither is a per-client signal one
can defend. What the store does hold is each script's solo runs (the report's baselines,
radtrack/compute/baselines.py) and the throughput each co-located run logged.

The model: run r's *solo-equivalent power* is ``q_r = solo J per unit_r x its co-located
throughput`` (the power the same work would have drawn run alone). In each accounting
window the energy the method in use gave the workload's runs together is split again among
the runs present in proportion to ``q_r x (part of the window r ran) x c_r``; ``other`` and
``idle`` stay as measured. The per-run factors ``c_r`` are fitted (iterative proportional
fitting) so that every run is charged ``E x its serial energy / the serial energy of all``
(serial energy: solo J per unit x its work, mean logged throughput x its time on the
account, the work the report counts), while every window's parts still add up to its
energy and a run alone in a window keeps it: identical twins doing the same work get the
same J per unit by construction whatever their start offsets, ends and number, MPS caps
follow the work each client got done, and every run's J per unit deviates from its solo
runs' by the same factor, the workload's energy vs serial. Without the factors a run whose
span outlasts its partner's with no work logged (start-up, the stop at MaxTime) is charged
less or more than its work: MPS:50 twins came 4.8 % apart on an H200. Where no factors fit
(a run's windows alone hold more than its proportion), they stay 1 and each run's own
deviation joins its bound.
It needs every run on the GPU to have a solo baseline and a logged throughput; otherwise
the signal-based split stays (process SM utilisation, the MPS rules) and is flagged.

Bounds (half-widths of 95 % intervals, % of a run's attributed energy; measured on one
H200 by benchmarks/attribution_analysis.py, README in the results folder):

- ``solo-model``: from the spread of the solo runs' J per unit: the baseline's relative
  error ``cv / sqrt(n)`` of each run, combined over the GPU's runs, times the share that
  depends on it; ``cv`` from the run's own repeats (two or more solo runs), else
  :data:`DEFAULT_SOLO_CV_PCT` (the largest repeat spread measured on the H200);
- ``solo-model`` also charges every run the same relative change in J per unit against its
  solo runs: the workload's energy against its runs' serial energy (co-location's own
  efficiency change; H200: -1 % to +13 % time-sliced and under MPS, +20 % for sgemm beside
  euclidean under MPS). How that change divides among the runs is not measured, so its size
  joins the bound in quadrature (the interval then holds the run's deviation from its solo
  J per unit by construction), and beyond :data:`CHANGE_FLAG_PCT` the attributed energy is
  flagged ``co-location-change`` (:data:`schema.CI95_FLAGS` 4, the tag's note gives the size);
- every other split (``process-sm-util``, ``mps-*``, ``held-time``): :data:`ASSUMED_BOUND_PCT`,
  the worst deviation measured on the H200, with the flag ``split-assumed``
  (:data:`schema.CI95_FLAGS` 3): run each script solo in the experiment, with a throughput
  logged, to get the ``solo-model`` split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from radtrack.compute.attribution import IDLE, OTHER, GpuAccount

SOLO_MODEL = "solo-model"
#: flag code of an attributed energy whose split is not validated (schema.CI95_FLAGS)
SPLIT_ASSUMED_FLAG = 3.0
#: the largest relative spread (CV, %) of a script's solo J per unit over two repeats
#: measured on the H200 (benchmarks/results/h200-2026-11-29-attribution)
DEFAULT_SOLO_CV_PCT = 26.0  # sgemm: 4,307 and 6,224 J at the same 51.0 TFLOP/s
#: a split without a validated bound: the worst deviation of a run's attributed J per unit
#: from its solo runs' measured on the H200 for that family of split (same results folder)
#: (process-sm-util: identical sgemm twins time-sliced, +46 %; mps-thread-cap: sgemm beside
#: euclidean under MPS, +518 %); held-time and MIG slices have no measurement: the MPS figure
ASSUMED_BOUND_PCT = {"process-sm-util": 46.0, "mps": 518.0, "held-time": 518.0, "mig": 518.0}
Z95 = 1.96
#: flag code of a solo-model energy whose workload drew more than CHANGE_FLAG_PCT more (or
#: less) than its runs' serial energy: the split of that change is assumed (schema.CI95_FLAGS)
CHANGE_FLAG = 4.0
CHANGE_FLAG_PCT = 5.0  # issue 51's MPS target: a run's J per unit within 5 % of its solo runs'
CHANGE_NOTE = "co-location-change"
#: the solo-model's fit of per-run factors (resplit): iterations and relative tolerance
FIT_ITERATIONS = 500
FIT_TOLERANCE = 1e-6


def serial_change_pct(acc: GpuAccount, q: Mapping[str, float],
                      spans: Mapping[str, tuple[float, float]], run: str | None = None) -> float:
    """The workload's energy on this GPU against its runs' serial energy (solo J per unit x
    the work each did: ``q`` x its time on the account), in % (+: co-located drew more); NaN
    unless every run has a rate and a span. With ``run``: that run's charged energy against
    its own serial energy, i.e. its J per unit against its solo runs' (the workload's figure
    wherever :func:`resplit` fitted its factors)."""
    runs = [c for c in acc.energy.columns if c not in (IDLE, OTHER)]
    if not runs or not all(r in q and r in spans for r in runs):
        return float("nan")
    lo, hi = float(acc.edges[0]), float(acc.edges[-1])
    chosen = [run] if run is not None else runs
    serial = sum(q[r] * max(min(spans[r][1], hi) - max(spans[r][0], lo), 0.0) for r in chosen)
    measured = sum(acc.energy_j(r) for r in chosen)
    return 100.0 * (measured / serial - 1.0) if serial > 0 else float("nan")


def rates(inter: pd.DataFrame) -> dict[str, float]:
    """run id -> solo-equivalent power (W) from an interference table
    (radtrack/compute/interference.py): solo J per unit x co-located throughput, where
    both are known and the unit is a logged throughput (not a whole run)."""
    out: dict[str, float] = {}
    if inter is None or inter.empty:
        return out
    for row in inter.to_dict("records"):
        jpu, tput = row.get("solo_energy_per_unit_j"), row.get("throughput")
        if row.get("work_unit") in (None, "", "run"):
            continue
        try:
            q = float(jpu) * float(tput)
        except (TypeError, ValueError):
            continue
        if math.isfinite(q) and q > 0:
            out[str(row["run_id"])] = q
    return out


def _overlap(edges: np.ndarray, start: float, end: float) -> np.ndarray:
    lo, hi = np.maximum(edges[:-1], start), np.minimum(edges[1:], end)
    return np.clip(hi - lo, 0.0, None) / np.diff(edges)


def _serial_weights(acc: GpuAccount, runs: list[str], q: Mapping[str, float],
                    spans: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """Per run (rows) and window (columns): its solo-equivalent power x its part of the window."""
    return np.vstack([q[r] * _overlap(acc.edges, *spans[r]) for r in runs])


def _fit(weight: np.ndarray, pooled: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """Per-run factors ``c`` such that splitting every window's ``pooled`` energy by
    ``c x weight`` gives each run its ``target`` in total (iterative proportional fitting:
    the windows' sums hold by construction, the runs' are fitted); None where no factors do
    (a run that held windows alone for more than its target), or on no convergence."""
    c = np.ones(len(weight))
    for _ in range(FIT_ITERATIONS):
        scaled = weight * c[:, None]
        total = scaled.sum(axis=0)
        got = (pooled * scaled / np.where(total > 0, total, 1.0)).sum(axis=1)
        if np.all(np.abs(got - target) <= FIT_TOLERANCE * target):
            return c
        c = c * target / np.where(got > 0, got, np.inf)
        if not np.all(np.isfinite(c) & (c > 0)):
            return None
    return None


def resplit(acc: GpuAccount, q: Mapping[str, float], spans: Mapping[str, tuple[float, float]]
            ) -> GpuAccount:
    """The account with its runs' energy split again by solo-equivalent power ``q`` (run ->
    W) over their ``spans`` (run -> (start, end)); unchanged (same object) unless every run
    on the GPU has a rate and a span, and for a GPU with one run or of the host's CPU side.

    Each window's energy goes to the runs present by ``q x their part of the window x a
    per-run factor``; the factors are fitted so that over the account every run is charged
    the runs' energy in proportion to its serial energy (``q`` x its time on the account, the
    work radtrack counts: mean logged throughput x duration, times solo J per unit). Why:
    with a factor of 1 a run whose span runs on past its partner's without logged work
    (start-up, a stop at MaxTime draining its queue) gets the GPU alone then while its work
    counts that time at its mean rate, so identical MPS:50 twins on an H200 came 4.8 % apart
    in J per TFLOP (benchmarks/results/h200-2026-11-29-fixed-cost), and a mean rate is not
    the rate of every window (a run faster alone is over-weighted in the shared ones).
    Where no factors fit (a run's windows alone hold more than its proportion) the factors
    stay 1 and the run's own change against serial joins its bound (:func:`bound_all`)."""
    runs = [c for c in acc.energy.columns if c not in (IDLE, OTHER)]
    if acc.host or len(runs) < 2 or not all(r in q and r in spans for r in runs):
        return acc
    weight = _serial_weights(acc, runs, q, spans)
    pooled = acc.energy[runs].to_numpy().sum(axis=1)
    free = weight.sum(axis=0) > 0  # windows no run's rate covers keep the signal's split
    fixed = acc.energy[runs].to_numpy().T * ~free
    serial = (weight * np.diff(acc.edges)).sum(axis=1)
    target = pooled.sum() * serial / serial.sum() - fixed.sum(axis=1) if serial.sum() > 0 else None
    factors = None
    if target is not None and np.all(target > 0) and free.any():
        factors = _fit(weight[:, free], pooled[free], target)
    weight = weight * (factors if factors is not None else np.ones(len(runs)))[:, None]
    total = weight.sum(axis=0)
    energy = acc.energy.copy()
    with np.errstate(all="ignore"):
        parts = np.where(total > 0, pooled * weight / np.where(total > 0, total, 1.0),
                         acc.energy[runs].to_numpy().T)
    for i, r in enumerate(runs):
        energy[r] = parts[i]
    share = acc.share.copy()
    busy = acc.share[runs].to_numpy().sum(axis=1)
    with np.errstate(all="ignore"):
        fractions = np.where(total > 0, weight / np.where(total > 0, total, 1.0), 0.0)
    for i, r in enumerate(runs):
        share[r] = np.where(total > 0, busy * fractions[i], acc.share[r].to_numpy())
    notes = {r: n for r, n in acc.notes.items() if r not in runs}
    return GpuAccount(acc.gpu, SOLO_MODEL, acc.edges, energy, share, notes, acc.host)


def _family(method: str) -> str:
    first = method.split("+")[0]
    return "mps" if first.startswith("mps") else "mig" if first.startswith("mig") else first


def split_bound(method: str, run: str, acc: GpuAccount,
                solo_cv_pct: Mapping[str, tuple[float, int]] | None = None) -> tuple[float, bool]:
    """(half-width of the split's 95 % interval in % of the run's attributed energy, whether
    the split is assumed rather than validated). ``solo_cv_pct``: run -> (CV % of its solo
    J per unit over its repeats, number of solo runs)."""
    if method == "solo" or acc.host:
        return 0.0, False
    if method != SOLO_MODEL:
        return ASSUMED_BOUND_PCT.get(_family(method), max(ASSUMED_BOUND_PCT.values())), True
    runs = [c for c in acc.energy.columns if c not in (IDLE, OTHER)]
    total = sum(acc.energy_j(r) for r in runs)
    share = acc.energy_j(run) / total if total > 0 else 1.0
    var = 0.0
    for r in runs:
        cv, n = (solo_cv_pct or {}).get(r, (float("nan"), 1))
        cv = cv if n >= 2 and math.isfinite(cv) else DEFAULT_SOLO_CV_PCT
        var += (cv / math.sqrt(max(n, 1))) ** 2
    # a run's share moves with its own weight against the others' by (1 - its share)
    return Z95 * (1.0 - share) * math.sqrt(var), False


def solo_spread(inter: pd.DataFrame, summary: pd.DataFrame) -> dict[str, tuple[float, int]]:
    """run id -> (CV % of its solo runs' J per unit, their number), from an interference
    table and the summaries of the same runs (``energy_j``, ``duration_s``, throughputs)."""
    out: dict[str, tuple[float, int]] = {}
    if inter is None or inter.empty or summary is None or summary.empty:
        return out
    stats = summary.set_index("run_id")
    for row in inter.to_dict("records"):
        ids = [i for i in str(row.get("solo_run_ids") or "").split(",") if i in stats.index]
        basis = row.get("slowdown_basis")
        column = f"{basis}_mean" if isinstance(basis, str) else ""
        if len(ids) < 2 or column not in stats.columns:
            out[str(row["run_id"])] = (float("nan"), len(ids))
            continue
        solo = stats.loc[ids]
        jpu = (solo["energy_j"] / (solo[column] * solo["duration_s"])).to_numpy(dtype=float)
        jpu = jpu[np.isfinite(jpu)]
        cv = float(np.std(jpu, ddof=1) / np.mean(jpu) * 100.0) if len(jpu) >= 2 else float("nan")
        out[str(row["run_id"])] = (cv, len(jpu))
    return out


def bound_all(acc: GpuAccount, solo_cv_pct: Mapping[str, tuple[float, int]] | None = None,
              q: Mapping[str, float] | None = None,
              spans: Mapping[str, tuple[float, float]] | None = None) -> GpuAccount:
    """``acc`` with :attr:`GpuAccount.split_bounds` filled for each of its runs; a
    ``solo-model`` account's bounds also hold each run's change against its serial energy
    (from the rates ``q`` and ``spans`` it was split with; the workload's change wherever
    the factors fitted), noted on the run beyond CHANGE_FLAG_PCT."""
    workload = serial_change_pct(acc, q or {}, spans or {}) if acc.method == SOLO_MODEL else float("nan")
    for run in acc.energy.columns:
        if run in (IDLE, OTHER):
            continue
        bound, assumed = split_bound(acc.method, run, acc, solo_cv_pct)
        # the run's own change: the workload's where the factors fitted, else its own
        change = serial_change_pct(acc, q or {}, spans or {}, run) if math.isfinite(workload) else workload
        if math.isfinite(change):
            bound = math.hypot(bound, change)
            if abs(change) > CHANGE_FLAG_PCT:
                own = ("" if abs(change - workload) < 0.05 else
                       f" (this run: {change:+.1f} % against its solo J per unit)")
                acc.notes[run] = (f"{CHANGE_NOTE}: co-located, the GPU drew {workload:+.1f} % against "
                                  f"this workload's runs solo for the same work{own}; the solo-model "
                                  f"shares that change in proportion, which is not measured: the 95 % "
                                  f"interval includes it")
        acc.split_bounds[run] = (bound, assumed)
    return acc


def split_flag(acc: GpuAccount, run: str) -> float:
    """The flag the split gives a run's attributed energy: SPLIT_ASSUMED_FLAG, CHANGE_FLAG or 0."""
    if acc.split_bounds.get(run, (0.0, False))[1]:
        return SPLIT_ASSUMED_FLAG
    return CHANGE_FLAG if acc.notes.get(run, "").startswith(CHANGE_NOTE) else 0.0


def with_split(ci_pct: float, flag: float, acc: GpuAccount, run: str) -> tuple[float, float]:
    """A run's attributed energy's (95 % half-width %, flag) from its device's counter
    interval and flag: the split's bound added in quadrature, flag 3 where it is assumed."""
    bound = acc.split_bounds.get(run, (0.0, False))[0]
    ci = float(np.hypot(ci_pct, bound)) if math.isfinite(ci_pct) else (bound if bound else ci_pct)
    return ci, split_flag(acc, run) or flag
