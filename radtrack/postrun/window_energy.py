"""Time and energy of a script's code windows, joined with the listeners' series after the run.

For each window the script recorded (radtrack/script/codewindows.py), on each device the
run used (a GPU, a Jetson board, a plugin's device; the host's CPU packages and DRAM where
``rapl`` or another host energy listener ran: radtrack/compute/gpu_uses.py ``run_uses``):
the device's energy over the window (the energy counter, shaped inside its intervals by
the power: radtrack/compute/device_energy.py ``cumulative_energy``; integrated power where
there is no counter), the run's attributed energy when it shared the device (its
per-second accounting, prorated at the window's edges), and the time-weighted mean power,
GPU utilisation and SM activity.

Stored on the run as metrics ``window/<name>/duration_s``, ``energy_j`` (attributed, summed
over every device, the host's CPU side included, like the run's ``energy_j``),
``gpu_energy_j`` (the whole energy of the devices of scope ``device``: GPUs, a board),
``cpu_energy_j`` (the whole energy of the host's CPU side, scope ``host``: each CPU package
and its DRAM, where read), ``power_w`` (``gpu_energy_j`` over the window), ``gpu_util_pct``,
``sm_active_pct``, the energy's 95 % interval ``energy_j_ci95_pct`` / ``gpu_energy_j_ci95_pct``
and ``energy_j_ci95_flag`` (radtrack/compute/energy_error.py; the attributed share carries
its GPUs' relative interval and its split's bound, flag 3 where the split is assumed:
radtrack/compute/split_model.py), the activity model's ``activity_energy_j`` where GPM ran
(radtrack/compute/energy_figures.py) (step = the window's step, else its occurrence) and the table
``windows/windows.parquet``. A window shorter than the power readings can resolve (the
sampling interval, at least the sensor's 100-ms refresh) gets ``below_resolution_flag`` =
1 and its duration only: no energy figure is made up for it. The GPUs and the host's CPU
side are resolved apart: a window the host's counters cannot resolve (RAPL's, read every
1 s) keeps its GPU figures and gets no ``cpu_energy_j`` and no attributed ``energy_j``
(which is over both); the flag says that nothing could be resolved.

Power rails (a Jetson's ``VDD_GPU_SOC``, RAPL's ``core``) get no window figure: a rail is a
part of its device's energy, never added to it; its energy is stored over the whole run
(``summary/<rail>/energy_j``, radtrack/store/traces.py) and its series at full resolution,
from which a window's share can be read (``radtrack export``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from radtrack.compute.attribution import GpuAccount, GpuUse
from radtrack.compute.device_energy import cumulative_energy
from radtrack.compute.energy_error import combine
from radtrack.compute.energy_figures import (
    flag_code,
    frame_keys,
    frame_of,
    gpu_energies,
    gpu_models,
)
from radtrack.compute.gpu_uses import run_uses
from radtrack.compute.split_model import split_flag
from radtrack.compute.summary import mean_between
from radtrack.script.codewindows import read_windows
from radtrack.vocab import energy_sources as es
from radtrack.vocab.schema import WINDOWS_ARTIFACT, window_key

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.postrun.end_inputs import EndRow as Row

TABLE_ARTIFACT = WINDOWS_ARTIFACT


def resolution_s(use: GpuUse) -> float:
    """The shortest span the run's power readings resolve: their spacing, and no less than
    the period its listener declares its sensor refreshes at (vocab.series.Series.refresh_s;
    the cautious 1-s default where it declares none)."""
    t = np.sort(np.asarray(use.readings.get("power_w", (np.array([]), np.array([])))[0], dtype=float))
    gap = float(np.median(np.diff(t))) if len(t) > 1 else float("inf")
    return max(gap, use.refresh_s)


def attributed_between(acc: GpuAccount, run: str, a: float, b: float) -> float:
    """The run's attributed energy between ``a`` and ``b`` (linear inside each 1-s window)."""
    if run not in acc.energy:
        return float("nan")
    cum = np.concatenate(([0.0], np.cumsum(acc.energy[run].to_numpy())))
    lo, hi = acc.edges[0], acc.edges[-1]
    if b < lo or a > hi:
        return float("nan")
    ends = np.interp([max(a, lo), min(b, hi)], acc.edges, cum)
    return float(ends[1] - ends[0])


def _column(frames: Mapping[str, pd.DataFrame], key: str | None) -> tuple[np.ndarray, np.ndarray] | None:
    frame = frame_of(frames, key) if key else None
    if frame is None:
        return None
    part = frame[["time", key]].dropna()
    return (part["time"].to_numpy(), part[key].to_numpy()) if len(part) else None


def window_table(windows: list[dict[str, object]], run: str, uses: Mapping[str, GpuUse],
                 frames: Mapping[str, pd.DataFrame], accounts: Mapping[str, GpuAccount],
                 models: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per recorded window, with the figures of the module docstring; ``models``:
    scope -> GPU model (energy_figures.gpu_models), whose sensor constants its intervals use."""
    rows = []
    seen: dict[str, int] = {}
    keys = frame_keys(frames)
    # the host's CPU side (scope host: CPU packages, DRAM), apart from the GPUs and boards
    host = {d for d, src in es.energy_sources(keys).items() if src.scope == "host"}
    sensors = {g.scope: g for g in gpu_energies(frames)} if uses else {}
    try:  # each GPU's sensor constants, by the model its listener declared
        constants = {s: g.constants((models or {}).get(s)) for s, g in sensors.items()}
    except ValueError:  # said once at the run's summaries (radtrack/store/traces.py)
        constants = {}
    for w in windows:
        name = str(w["name"])
        a, b = float(w["start"]), float(w["end"])  # type: ignore[arg-type]
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        row: dict[str, object] = {"name": name, "step": w.get("step") if w.get("step") is not None
                                  else occurrence, "start": a, "end": b, "duration_s": b - a,
                                  "open_at_end": bool(w.get("open_at_end", False))}
        if uses:
            # each side by its own readings' resolution (the host's counters every 1 s, a
            # GPU's power every 0.1 s): what one cannot resolve leaves the other's figures
            gpu_short = any(b - a < resolution_s(u) for s, u in uses.items() if s not in host)
            cpu_short = any(b - a < resolution_s(u) for s, u in uses.items() if s in host)
            devices, hosts = bool(set(uses) - host), bool(set(uses) & host)
            short = gpu_short or cpu_short  # the attributed energy_j is over both
            row["below_resolution"] = (gpu_short or not devices) and (cpu_short or not hosts)
            gpu_j = cpu_j = att_j = model_j = 0.0
            utils, actives, parts, gpu_parts, flags = [], [], [], [], []
            splits: list[tuple[float, bool]] = []  # each shared device's split bound
            for scope, use in uses.items():
                # a GPU smi followed mid-run is the run's from then on (radtrack/listeners/gpu_follow.py)
                lo = max(a, use.start)
                if lo >= b:
                    continue
                cum = cumulative_energy(use, np.array([lo, b]))
                joules = float(cum[1] - cum[0])
                if scope in host:
                    cpu_j += joules
                else:
                    gpu_j += joules
                if (sensor := sensors.get(scope)) is not None and scope in constants:
                    ci = sensor.interval(lo, b, constants[scope])
                    parts.append((joules, ci.ci95_pct))
                    flags.append(flag_code(ci))
                    model_j += sensor.model_energy(lo, b)
                else:
                    parts.append((joules, float("nan")))
                if scope not in host:
                    gpu_parts.append(parts[-1])
                acc = accounts.get(use.gpu)
                att_j += attributed_between(acc, run, lo, b) if acc is not None else float("nan")
                if acc is not None:
                    splits.append((acc.split_bounds.get(run, (0.0, False))[0], split_flag(acc, run)))
                if (u := _column(frames, es.find(keys, scope, "gpu_util_pct", "utilisation"))) is not None:
                    utils.append(mean_between(*u, a, b))
                if (s := _column(frames, es.find(keys, scope, "sm_active_pct", "utilisation"))) is not None:
                    actives.append(mean_between(*s, a, b))
            if not short:
                # the attributed share carries its devices' relative interval and the widest
                # split bound among them; the split's flag, where it has one, before the
                # counter's (split_model.split_flag: 3 assumed, 4 co-location's change)
                bound = max((x for x, _ in splits), default=0.0)
                split = max((f for _, f in splits), default=0.0)
                flag = split if split else (max(flags) if flags else np.nan)
                row.update(energy_j=att_j, energy_j_ci95_pct=float(np.hypot(combine(parts), bound)),
                           energy_j_ci95_flag=flag)
            if devices and not gpu_short:
                row.update(gpu_energy_j=gpu_j, power_w=gpu_j / (b - a) if b > a else np.nan,
                           gpu_util_pct=float(np.nanmean(utils)) if utils else np.nan,
                           sm_active_pct=float(np.nanmean(actives)) if actives else np.nan,
                           gpu_energy_j_ci95_pct=combine(gpu_parts),
                           activity_energy_j=model_j if model_j > 0 else np.nan)
            if hosts and not cpu_short:
                row["cpu_energy_j"] = cpu_j
        rows.append(row)
    return pd.DataFrame(rows)


def record_windows(client: MlflowClient, run: str, windows_file: Path, uses: Mapping[str, GpuUse],
                   frames: Mapping[str, pd.DataFrame], accounts: Mapping[str, GpuAccount],
                   models: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Join the run's windows and store them; returns the table (empty without windows)."""
    from radtrack.store.entities import Metric

    table = window_table(read_windows(windows_file), run, uses, frames, accounts, models)
    if table.empty:
        return table
    metrics = []
    for w in table.to_dict("records"):
        ts, step = int(float(w["end"]) * 1000), int(w["step"])
        values = {"duration_s": w["duration_s"]}
        if w.get("below_resolution"):
            values["below_resolution_flag"] = 1.0
        for key in ("energy_j", "gpu_energy_j", "cpu_energy_j", "power_w", "gpu_util_pct", "sm_active_pct",
                    "energy_j_ci95_pct", "gpu_energy_j_ci95_pct", "energy_j_ci95_flag", "activity_energy_j"):
            value = w.get(key)
            if value is not None and np.isfinite(value):
                values[key] = float(value)
        metrics += [Metric(window_key(w["name"], k), float(v), ts, step) for k, v in values.items()]
    for i in range(0, len(metrics), 1000):
        client.log_batch(run, metrics=metrics[i:i + 1000])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(TABLE_ARTIFACT).name
        table.to_parquet(path, index=False)
        client.log_artifact(run, str(path), str(Path(TABLE_ARTIFACT).parent))
    return table


def record_row_windows(client: MlflowClient, row: Row, accounts: Mapping[str, GpuAccount]) -> pd.DataFrame:
    """:func:`record_windows` for one row of a workload the launcher just ran."""
    path = row.folder / "windows.jsonl"
    if not path.is_file():
        return pd.DataFrame()
    frames = row.sink.frames if row.sink is not None else {}
    uses = (run_uses(row.run_id, frames, row.tags, row.spec.collocation, row.started,
                     row.ended or time.time()) if row.started else {})
    return record_windows(client, row.run_id, path, uses, frames, accounts, gpu_models(row.tags))
