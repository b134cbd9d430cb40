"""A run's GPUs as co-location accounting sees them, from its traces and tags.

The launcher calls :func:`run_uses` with the traces it just wrote; the analysis calls it
with the Parquet traces it downloads, so both account from the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from radtrack.compute.attribution import GPU_SLICES, GpuUse
from radtrack.vocab import energy_sources as es
from radtrack.vocab.device_identity import device_facts
from radtrack.vocab.schema import HOSTNAME

#: what accounting reads of a device -> (its key's last part, the roles it may declare);
#: the device's power and energy counter come by role (radtrack/vocab/energy_sources.py)
READINGS = {
    "proc_sm_util_pct": ("proc_share",),
    "all_procs_sm_util_pct": ("proc_share",),
    "mps_sm_util_pct": ("proc_share",),
    "proc_mem_used_mib": ("memory",),
    "sm_active_pct": ("utilisation",),
}
_GPU = re.compile(r"gpu\d+")
_MIG_SLICES = re.compile(r"^(\d+)g\.")


def placement(collocation: str | None) -> tuple[str, float | None, int | None]:
    """(mode, MPS thread cap %, MIG slices) of a row's Collocation cell as the launcher
    tags it (``-``, ``mps``, ``mps:50``, ``1g.10gb``)."""
    c = (collocation or "-").strip().lower()
    if c in ("", "-"):
        return "plain", None, None
    if c == "mps" or c.startswith("mps:"):
        _, _, pct = c.partition(":")
        return "mps", float(pct) if pct else None, None
    m = _MIG_SLICES.match(c)
    return "mig", None, int(m.group(1)) if m else None


def gpu_slices(name: str) -> int:
    """Compute slices of the whole GPU (A30: 4; A100, H100, H200, B200: 7)."""
    return 4 if "A30" in name else GPU_SLICES


def _pairs(frames: Mapping[str, pd.DataFrame], column: str | None,
           scale: float = 1.0) -> tuple[np.ndarray, np.ndarray] | None:
    frame = frames.get(column.split("/", 1)[0]) if column else None
    if frame is None or column not in frame.columns:
        return None
    part = frame[["time", column]].dropna()
    if part.empty:
        return None
    return part["time"].to_numpy(dtype=float), part[column].to_numpy(dtype=float) * scale


def _keys(frames: Mapping[str, pd.DataFrame]) -> list[str]:
    return sorted({str(c) for f in frames.values() for c in f.columns if c not in ("time", "step")})


def scopes(frames: Mapping[str, pd.DataFrame] | pd.DataFrame | None) -> list[str]:
    """The devices (``gpu0``, ``package0``, a board) with a declared whole-device power or
    energy counter in the traces (any listener's), GPUs first."""
    if frames is None:
        return []
    keys = ([str(c) for c in frames.columns] if isinstance(frames, pd.DataFrame)
            else _keys(frames))
    found = {s.device for s in es.energy_sources(keys).values()}
    gpus = sorted((d for d in found if _GPU.fullmatch(d)), key=lambda s: int(s[3:]))
    return gpus + sorted(found - set(gpus))


def physical_gpu(tags: Mapping[str, str], scope: str) -> str | None:
    """The physical GPU's UUID behind a run's scope (a MIG instance's parent GPU); for a
    device that is no GPU (a board, a CPU package: no UUID), the host's name and the device,
    which co-located rows on that host share. None for a GPU without its UUID."""
    facts = device_facts(tags).get(scope, {})  # whichever listener read it
    uuid = facts.get("parent_uuid") or facts.get("uuid")
    if uuid or _GPU.fullmatch(scope):
        return uuid
    host = tags.get(HOSTNAME)
    return f"{host}:{scope}" if host else f"this host:{scope}"


def followed(tags: Mapping[str, str], scope: str) -> float:
    """When a listener began to follow GPU ``scope``, one outside the run's own that its
    process tree turned out to use (its ``...<scope>.followed`` tag, unix s;
    radtrack/listeners/gpu_follow.py): the run uses it from then. -inf for one of the run's own GPUs."""
    try:
        return float(device_facts(tags).get(scope, {}).get("followed") or "-inf")
    except ValueError:
        return float("-inf")


def run_uses(run: str, frames: Mapping[str, pd.DataFrame], tags: Mapping[str, str],
             collocation: str | None, start: float, end: float) -> dict[str, GpuUse]:
    """scope -> the run's use of that GPU, from whichever listeners declare its power
    (``device_power``), energy counter (``energy_counter``) and per-process shares
    (``proc_share``); a scope without them or without a GPU UUID is left out (nothing to
    account it by). A GPU followed by its listener is the run's from when it was followed."""
    mode, thread_pct, slices = placement(collocation)
    keys = _keys(frames)
    by_device = es.sources(keys)
    out: dict[str, GpuUse] = {}
    for scope in scopes(frames):
        gpu = physical_gpu(tags, scope)
        if not gpu:
            continue
        found = by_device.get(scope, [])
        readings = {}
        power = es.best(found, "power") or es.best(found, "average")
        counter = es.best(found, "counter")
        if power is not None and (p := _pairs(frames, power.key, power.scale)):
            readings["power_w"] = p
        if counter is not None and (p := _pairs(frames, counter.key, counter.scale)):
            readings["energy_j"] = p
        # the device's own power samples (a driver's buffer, ~50 Hz on an H100), where read, are the
        # finest power series: they shape the energy counter's intervals
        # (device_energy.cumulative_energy)
        sampled = es.best(found, "samples")
        samples = _pairs(frames, sampled.key, sampled.scale) if sampled is not None else None
        if samples is not None and len(samples[0]) >= 2:
            readings["power_w"] = samples
        readings |= {q: p for q, roles in READINGS.items()
                     if (p := _pairs(frames, es.find(keys, scope, q, *roles)))}
        name = device_facts(tags).get(scope, {}).get("name", "")
        # the sensor's period as its listener declared it (none declared: the cautious default)
        declared = next((s.refresh_s for s in (power, counter) if s is not None and s.refresh_s), None)
        out[scope] = GpuUse(run=run, gpu=gpu, mode=mode, start=max(start, followed(tags, scope)),
                            end=end, readings=readings,
                            thread_pct=thread_pct, slices=slices, gpu_slices=gpu_slices(name),
                            refresh_s=declared or es.DEFAULT_REFRESH_S)
    return out
