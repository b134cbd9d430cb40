"""Co-location accounting: each run's share of a shared GPU and the energy it is charged.

A *use* is one run on one physical GPU (a MIG instance counts on its parent GPU). The
workload's span is cut into windows of :data:`WINDOW_S` seconds, and per GPU and window:

- ``E(w)``, the GPU's measured energy: the hardware counter's increase, spread inside each
  counter interval (smi reads it every 5 s, amdsmi every interval) in proportion to the integrated instantaneous
  power, so the windows follow the power while their sum is the counter's; integrated power
  alone where no counter was read.
- ``a_r(w)``, each run's activity as a percentage of the whole GPU, from the best source
  there is (the method, recorded per GPU in the ``radtrack.attribution.<scope>`` tag):

  * time-sharing (``process-sm-util``): the run's process tree's share of the GPU's
    compute, the ``proc_share`` series ``<listener>/<scope>/proc_sm_util_pct`` whichever
    listener declares it (smi: NVML's SM samples; amdsmi: the GFX engine's time);
  * MPS (``mps-<rule>``): NVML gives an SM figure only for the MPS server
    (``smi/<scope>/mps_sm_util_pct``), which is split among the workload's MPS clients by
    a rule: ``thread-cap`` (their ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, 100 where unset:
    an equal split without caps; the default), ``equal`` or ``memory`` (device memory);
  * MIG (``mig-gpm-sm-active``): the instance's SM activity from GPM
    (``dcgm/<scope>/sm_active_pct``) times the instance's share of the GPU's slices.

- ``other(w)``: SM utilisation of every process on the GPU
  (``<listener>/<scope>/all_procs_sm_util_pct``, role ``proc_share``) minus the workload's own.

Split: with ``busy = sum(a_r) + other > 0``, run r gets ``E(w) a_r / busy`` and processes
outside radtrack ``E(w) other / busy``: the idle part of a busy window is carried by
whoever was busy, in proportion, as a solo run carries its own idle moments. A window in
which nothing ran is charged equally (MIG: by slices) to the runs holding a context on the
GPU (device memory in use), and to ``idle`` when none does. A GPU with a single run
(``solo``) keeps the whole GPU: it holds every window of its span (processes outside
radtrack still get their own share). In every window the parts add up to ``E(w)``,
so a GPU's attributed energies plus ``other`` plus ``idle`` are its measured energy.

Where every run on a GPU has a solo baseline with a logged throughput, the end of a workload
splits again by the ``solo-model`` (radtrack/compute/split_model.py); this split is the fallback.

A device of the host's CPU side (a RAPL package or DRAM, ``GpuUse.host``) shared by
co-located runs is split by CPU time instead (``process-cpu-time``,
radtrack/compute/cpu_energy_share.py): with every run's process-tree CPU read, each
window's energy goes by the runs' CPU seconds over the host's busy CPU seconds, the rest
to ``other``, a window without CPU time to ``idle``; else by holding time, as above.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from radtrack.compute import cpu_energy_share as ces
from radtrack.compute.device_energy import clean_series, gpu_window_energy

WINDOW_S = 1.0
IDLE = "idle"
OTHER = "other"
MPS_RULES = ("equal", "thread-cap", "memory")
DEFAULT_MPS_RULE = "thread-cap"  # tracked the throughput truth best on the H100 (docs/analysis.md)
GPU_SLICES = 7  # compute slices of a whole H100 / A100 (the 7g profile)
HOST_METHOD = "process-cpu-time"  # co-located runs on a host's CPU packages and DRAM


@dataclass
class GpuUse:
    """One run on one physical GPU.

    ``readings`` maps a quantity (``power_w``, ``energy_j``, ``proc_sm_util_pct``,
    ``all_procs_sm_util_pct``, ``mps_sm_util_pct``, ``proc_mem_used_mib``,
    ``sm_active_pct``) to its samples as (unix seconds, values)."""

    run: str
    gpu: str  # physical GPU UUID (the parent's for a MIG instance)
    mode: str  # "plain" | "mps" | "mig"
    start: float  # the run's measured span, unix seconds
    end: float
    readings: Mapping[str, tuple[np.ndarray, np.ndarray]]
    thread_pct: float | None = None  # MPS active-thread cap
    slices: int | None = None  # MIG compute slices of the run's instance
    gpu_slices: int = GPU_SLICES
    host: bool = False  # a device of the host's CPU side (package, DRAM): split by CPU time
    #: its power sensor's refresh period as its listener declared it (s); 0: the readings'
    #: own spacing alone (a use built without a declaration)
    refresh_s: float = 0.0

    def has(self, quantity: str) -> bool:
        t, v = self.readings.get(quantity, (np.array([]), np.array([])))
        return bool(np.isfinite(np.asarray(v, dtype=float)).any())


@dataclass
class GpuAccount:
    """One GPU's accounting over the windows ``edges``."""

    gpu: str
    method: str
    edges: np.ndarray
    energy: pd.DataFrame  # joules per window (rows) for each run, OTHER and IDLE (columns)
    share: pd.DataFrame  # activity per window, % of the whole GPU, for each run and OTHER
    notes: dict[str, str] = field(default_factory=dict)  # run -> why a figure is missing
    host: bool = False  # the host's CPU side: ``share`` is CPU in % of one core
    # run -> (half-width % of the split's own 95 % interval, whether the split is assumed):
    # filled at the end of a workload (radtrack/compute/split_model.py split_bound)
    split_bounds: dict[str, tuple[float, bool]] = field(default_factory=dict)

    @property
    def gpu_energy_j(self) -> float:
        return float(self.energy.to_numpy().sum())

    def energy_j(self, party: str) -> float:
        return float(self.energy[party].sum()) if party in self.energy else 0.0

    def power_w(self) -> pd.DataFrame:
        """Attributed power per window (W): each party's energy over the window's length."""
        return self.energy.div(np.diff(self.edges), axis=0)


def window_edges(start: float, end: float, width: float = WINDOW_S) -> np.ndarray:
    """Edges of ``width``-second windows from ``start`` to ``end`` (the last one shorter)."""
    if not end > start:
        raise ValueError(f"attribution: the span must end after it starts ({start} .. {end})")
    edges = np.arange(start, end, width, dtype=float)
    return np.append(edges, end) if edges[-1] < end else edges


def _steps(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covered fraction) per window of readings that each describe the time since
    the previous one; the first reading covers one typical gap before it."""
    t, v = clean_series(t, v)
    n = len(edges) - 1
    if len(t) == 0:
        return np.full(n, np.nan), np.zeros(n)
    gap = float(np.median(np.diff(t))) if len(t) > 1 else WINDOW_S
    bp = np.concatenate(([t[0] - gap], t))
    area = np.concatenate(([0.0], np.cumsum(v * np.diff(bp))))
    cover = bp - bp[0]
    da = np.diff(np.interp(edges, bp, area))
    dc = np.diff(np.interp(edges, bp, cover))
    ok = dc > 1e-9
    means = np.full(n, np.nan)
    means[ok] = da[ok] / dc[ok]
    return means, dc / np.diff(edges)


def step_means(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per window, the mean of readings that each describe the time since the previous one
    (NVML's per-process samples do: a reading averages what happened since the last read);
    the first reading covers one typical gap before it. NaN where no reading covers a window."""
    return _steps(t, v, edges)[0]


def _overlap(use: GpuUse, edges: np.ndarray) -> np.ndarray:
    """Fraction of each window inside the run's span."""
    lo = np.maximum(edges[:-1], use.start)
    hi = np.minimum(edges[1:], use.end)
    return np.clip(hi - lo, 0.0, None) / np.diff(edges)


def _nanmean(rows: list[np.ndarray]) -> np.ndarray:
    """Column means ignoring NaN; 0 where a column has no number at all."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return np.nan_to_num(np.nanmean(np.vstack(rows), axis=0), nan=0.0)


def _means(use: GpuUse, quantity: str, edges: np.ndarray) -> np.ndarray:
    return step_means(*use.readings.get(quantity, (np.array([]), np.array([]))), edges)


def _mps_weights(uses: Sequence[GpuUse], edges: np.ndarray, rule: str) -> np.ndarray:
    """(runs x windows) weights for splitting the MPS server's activity."""
    if rule == "thread-cap":
        w = np.array([[u.thread_pct or 100.0] for u in uses], dtype=float)
        return np.repeat(w, len(edges) - 1, axis=1)
    if rule == "memory":
        mem = np.vstack([_means(u, "proc_mem_used_mib", edges) for u in uses])
        return np.nan_to_num(mem, nan=0.0)
    if rule == "equal":
        return np.ones((len(uses), len(edges) - 1))
    raise ValueError(f"attribution: unknown MPS rule {rule!r} (one of {', '.join(MPS_RULES)})")


def _activity(uses: Sequence[GpuUse], edges: np.ndarray, mps_rule: str
              ) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, str]]:
    """(runs x windows) activity in % of the GPU, the windows' ``other`` activity, the
    method's parts and notes about runs without a reading of their own."""
    n = len(edges) - 1
    act = np.zeros((len(uses), n))
    inside = np.vstack([_overlap(u, edges) for u in uses])
    methods: list[str] = []
    notes: dict[str, str] = {}
    own = np.zeros(n)
    mps = [i for i, u in enumerate(uses) if u.mode == "mps"]
    plain = [u for u in uses if u.mode == "plain"]
    if plain and not all(u.has("proc_sm_util_pct") for u in plain):
        # without every plain run's own SM figure no activity split is honest: the GPU's
        # energy goes to the runs holding it, equally, and nothing to "other"
        for u in uses:
            notes[u.run] = "no per-process SM utilisation on this GPU: charged by holding time"
        return act, np.zeros(n), ["held-time"], notes
    for i, u in enumerate(uses):
        if u.mode == "plain":
            act[i] = np.nan_to_num(_means(u, "proc_sm_util_pct", edges), nan=0.0) * inside[i]
            methods.append("process-sm-util")
        elif u.mode == "mig":
            if u.has("sm_active_pct"):
                share = (u.slices or 1) / u.gpu_slices
                act[i] = np.nan_to_num(_means(u, "sm_active_pct", edges), nan=0.0) * share * inside[i]
                methods.append("mig-gpm-sm-active")
            else:
                notes[u.run] = "no GPM SM activity for the MIG instance: charged by slices"
                methods.append("mig-slices")
        own += act[i]
    if mps:
        pools = [_means(uses[i], "mps_sm_util_pct", edges) for i in mps]
        pool = _nanmean(pools)
        weights = _mps_weights([uses[i] for i in mps], edges, mps_rule) * inside[mps]
        total = weights.sum(axis=0)
        with np.errstate(all="ignore"):
            act[mps] = np.where(total > 0, pool * weights / np.where(total > 0, total, 1.0), 0.0)
        own += act[mps].sum(axis=0)
        for i in mps:
            notes[uses[i].run] = ("MPS client: NVML accounts its SM work to the MPS server; the "
                                  f"server's share is split by the {mps_rule!r} rule")
        methods.append(f"mps-{mps_rule}")
    other = np.zeros(n)  # MIG: other instances' processes are invisible to the listeners
    everything = [_steps(*u.readings["all_procs_sm_util_pct"], edges) for u in uses
                  if u.mode != "mig" and u.has("all_procs_sm_util_pct")]
    if everything:
        # Only where every run in the window has its own reading over its part of it
        # (listeners read at their own moments, and a window one of them covers only in
        # part would show that run's work as someone else's), and a run's reading of every
        # process covers the whole window (the runs' readings together: a run's listeners
        # stop at its end, its partners' read on).
        complete = np.ones(n, dtype=bool)
        for i, u in enumerate(uses):
            own_key = "mps_sm_util_pct" if u.mode == "mps" else "proc_sm_util_pct"
            if u.mode != "mig" and u.has(own_key):
                covered = _steps(*u.readings[own_key], edges)[1]
                complete &= (inside[i] == 0) | (covered >= np.minimum(inside[i], 1.0) - 0.001)
        whole = [np.where(c >= 0.999, m, np.nan) for m, c in everything]
        complete &= np.isfinite(np.vstack(whole)).any(axis=0)
        other = np.where(complete, np.clip(_nanmean(whole) - own, 0.0, None), 0.0)
    return act, other, list(dict.fromkeys(methods)), notes


def _holders(uses: Sequence[GpuUse], edges: np.ndarray) -> np.ndarray:
    """(runs x windows) weight of each run holding a context on the GPU in the window."""
    out = np.vstack([_overlap(u, edges) for u in uses])
    if len(uses) == 1:
        return out  # a solo run holds its GPU for its whole span
    for i, u in enumerate(uses):
        if u.has("proc_mem_used_mib"):
            mem = _means(u, "proc_mem_used_mib", edges)
            out[i] *= np.nan_to_num(mem, nan=0.0) > 0
        if u.mode == "mig":
            out[i] *= (u.slices or 1)
    return out


def split_energy(energy: np.ndarray, activity: np.ndarray, other: np.ndarray,
                 holders: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per window, ``energy`` split into (runs x windows, other, idle) joules by the rule of
    this module's docstring. Windows of unknown energy (NaN) give 0 to everyone."""
    e = np.nan_to_num(energy, nan=0.0)
    busy = activity.sum(axis=0) + other
    held = holders.sum(axis=0)
    safe_busy = np.where(busy > 0, busy, 1.0)
    safe_held = np.where(held > 0, held, 1.0)
    runs = np.where(busy > 0, e * activity / safe_busy,
                    np.where(held > 0, e * holders / safe_held, 0.0))
    to_other = np.where(busy > 0, e * other / safe_busy, 0.0)
    to_idle = np.where((busy <= 0) & (held <= 0), e, 0.0)
    return runs, to_other, to_idle


def account_gpu(uses: Sequence[GpuUse], edges: np.ndarray,
                mps_rule: str = DEFAULT_MPS_RULE) -> GpuAccount:
    """The accounting of one GPU shared by ``uses`` (all on the same ``gpu``)."""
    if not uses:
        raise ValueError("attribution: a GPU needs at least one run")
    gpus = {u.gpu for u in uses}
    if len(gpus) != 1:
        raise ValueError(f"attribution: uses of several GPUs given together: {sorted(gpus)}")
    runs = [u.run for u in uses]
    if len(set(runs)) != len(runs):
        raise ValueError(f"attribution: a run appears twice on GPU {uses[0].gpu}")
    energy = gpu_window_energy(uses, edges)
    if uses[0].host and len(uses) > 1:
        return _account_host(uses, edges, energy)
    activity, other, methods, notes = _activity(uses, edges, mps_rule)
    if len(uses) == 1:
        methods = ["solo"]
        notes = {}
    parts, to_other, to_idle = split_energy(energy, activity, other, _holders(uses, edges))
    mid = (edges[:-1] + edges[1:]) / 2
    table = pd.DataFrame(parts.T, columns=runs, index=mid)
    table[OTHER], table[IDLE] = to_other, to_idle
    share = pd.DataFrame(activity.T, columns=runs, index=mid)
    share[OTHER] = other
    return GpuAccount(uses[0].gpu, "+".join(methods), edges, table, share, notes, uses[0].host)


def _account_host(uses: Sequence[GpuUse], edges: np.ndarray, energy: np.ndarray) -> GpuAccount:
    """A host CPU-side device (package, DRAM) shared by co-located runs: each window's
    energy split by the runs' CPU seconds over the host's busy CPU seconds
    (radtrack/compute/cpu_energy_share.py), ``other`` the rest of the busy time, ``idle``
    a window without any; by holding time where a run's CPU time was not read."""
    width, mid = np.diff(edges), (edges[:-1] + edges[1:]) / 2
    if not all(u.has(ces.PROC_CPU) for u in uses):
        held = np.vstack([_overlap(u, edges) for u in uses])
        parts, to_other, to_idle = split_energy(energy, np.zeros_like(held), np.zeros(len(width)), held)
        table = pd.DataFrame(parts.T, columns=[u.run for u in uses], index=mid)
        table[OTHER], table[IDLE] = to_other, to_idle
        notes = {u.run: "no process CPU time on this host: charged by holding time" for u in uses}
        return GpuAccount(uses[0].gpu, "held-time", edges, table, table.drop(columns=IDLE) * 0.0, notes,
                          True)
    # the rule per piece between the energy readings, summed into the windows: a window's
    # totals would split its energy by CPU time averaged over a change in the host's load
    cuts = ces.reading_cuts(edges, [u.readings[k][0] for u in uses for k in ("energy_j", "power_w")
                                    if k in u.readings])
    used = {u.run: ces.window_seconds(u.readings[ces.PROC_CPU], cuts, u.start, u.end) for u in uses}
    busy = ces.host_busy_seconds([u.readings[ces.HOST_CPU] for u in uses if u.has(ces.HOST_CPU)], cuts)
    split, to_other, to_idle, used, busy = ces.shares_in_windows(gpu_window_energy(uses, cuts), used,
                                                                 busy, cuts, edges)
    table = pd.DataFrame(split, index=mid)
    table[OTHER], table[IDLE] = to_other, to_idle
    share = pd.DataFrame({r: 100.0 * u / width for r, u in used.items()}, index=mid)
    rest = np.zeros(len(width)) if busy is None else busy - np.sum(list(used.values()), axis=0)
    share[OTHER] = 100.0 * np.clip(rest, 0.0, None) / width
    notes = ({} if busy is not None else
             {u.run: "no host CPU time per core: the runs' CPU time stands for the host's, "
                     "nothing to other processes" for u in uses})
    return GpuAccount(uses[0].gpu, HOST_METHOD, edges, table, share, notes, True)


def account(uses: Sequence[GpuUse], start: float, end: float, width: float = WINDOW_S,
            mps_rule: str = DEFAULT_MPS_RULE) -> dict[str, GpuAccount]:
    """Every GPU of a workload (span ``start`` .. ``end``): GPU UUID -> its accounting.
    Every run's start and end is a window edge too: a window never straddles a run's end, so
    no run is charged energy drawn after it ended (span-exact; a 1-s window once gave a run
    that ended 0.24 s into it 83 % of the window's host energy by its CPU time)."""
    bounds = [b for u in uses for b in (u.start, u.end) if start < b < end]
    edges = np.unique(np.concatenate([window_edges(start, end, width), bounds]))
    by_gpu: dict[str, list[GpuUse]] = {}
    for u in uses:
        by_gpu.setdefault(u.gpu, []).append(u)
    return {gpu: account_gpu(group, edges, mps_rule) for gpu, group in by_gpu.items()}
