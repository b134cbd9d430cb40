"""A run's GPUs as co-location accounting sees them, from its traces and tags.

The launcher calls :func:`run_uses` with the traces it just wrote; the analysis calls it
with the Parquet traces it downloads, so both account from the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from radtrack.analysis.attribution import GPU_SLICES, GpuUse
from radtrack.store.schema import gpu_tag

SMI_READINGS = ("power_w", "energy_j", "proc_sm_util_pct", "all_procs_sm_util_pct",
                "mps_sm_util_pct", "proc_mem_used_mib")
DCGM_READINGS = ("sm_active_pct",)
_SCOPE = re.compile(r"smi/(gpu\d+)/")
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


def _pairs(frame: pd.DataFrame | None, column: str) -> tuple[np.ndarray, np.ndarray] | None:
    if frame is None or column not in frame.columns:
        return None
    part = frame[["time", column]].dropna()
    if part.empty:
        return None
    return part["time"].to_numpy(dtype=float), part[column].to_numpy(dtype=float)


def scopes(smi: pd.DataFrame | None) -> list[str]:
    """The GPU scopes (``gpu0``, ...) an smi trace has readings for."""
    if smi is None:
        return []
    return sorted({m.group(1) for c in smi.columns if (m := _SCOPE.match(str(c)))},
                  key=lambda s: int(s[3:]))


def physical_gpu(tags: Mapping[str, str], scope: str) -> str | None:
    """The physical GPU's UUID behind a run's scope (a MIG instance's parent GPU)."""
    return tags.get(gpu_tag(scope, "parent_uuid")) or tags.get(gpu_tag(scope, "uuid"))


def run_uses(run: str, frames: Mapping[str, pd.DataFrame], tags: Mapping[str, str],
             collocation: str | None, start: float, end: float) -> dict[str, GpuUse]:
    """scope -> the run's use of that GPU; a scope without smi readings or GPU UUID is
    left out (nothing to account it by)."""
    smi, dcgm = frames.get("smi"), frames.get("dcgm")
    mode, thread_pct, slices = placement(collocation)
    out: dict[str, GpuUse] = {}
    for scope in scopes(smi):
        gpu = physical_gpu(tags, scope)
        if not gpu:
            continue
        readings = {q: p for q in SMI_READINGS if (p := _pairs(smi, f"smi/{scope}/{q}"))}
        # the driver's own ~50 Hz power samples, where smi read them, are the finest power
        # series: they shape the energy counter's intervals (attribution.cumulative_energy)
        samples = _pairs(smi, f"smi/{scope}/power_sample_w")
        if samples is not None and len(samples[0]) >= 2:
            readings["power_w"] = samples
        readings |= {q: p for q in DCGM_READINGS if (p := _pairs(dcgm, f"dcgm/{scope}/{q}"))}
        name = tags.get(gpu_tag(scope, "name"), "")
        out[scope] = GpuUse(run=run, gpu=gpu, mode=mode, start=start, end=end, readings=readings,
                            thread_pct=thread_pct, slices=slices, gpu_slices=gpu_slices(name))
    return out
