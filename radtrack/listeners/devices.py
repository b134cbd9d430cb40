"""Resolve the run's GPUs, written as CUDA_VISIBLE_DEVICES entries, to NVML handles.

Which entries there are and what each names follow ``radtrack.device_entries`` (the
selection rules ``radtrack.gpus`` resolves with too); this module finds their NVML handles. The
scope of a device is ``gpu<i>`` with ``i`` its position in the list, i.e. the CUDA
index the run sees. Indices are NVML (PCI bus) order, which is CUDA's order when
``CUDA_DEVICE_ORDER=PCI_BUS_ID``; the launcher sets that for the runs it starts.

A listener watches only the run's GPUs (its ``--devices``, else its CUDA_VISIBLE_DEVICES;
every GPU where neither is set): what watching costs grows with the GPUs watched. With
``RADTRACK_ALL_GPUS=1`` in its environment (a sheet row's Env cell) it watches every GPU
NVML sees instead, the host-wide view, scoped by NVML index (``gpu<i>`` = NVML GPU i).
A GPU outside the run's that a process of its tree turns out to use is followed from then
on (radtrack/listeners/gpu_follow.py; :func:`unwatched` lists where to look, :func:`gpu_at`
describes one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from radtrack.device_entries import LEGACY_MIG_RE, uuid_matches, visible_entries
from radtrack.errors import RadtrackError
from radtrack.listeners.nvml import NA, nvml_query, text

__all__ = ["ALL_GPUS_ENV", "GpuDevice", "gpu_at", "host_wide", "resolve", "run_devices",
           "unwatched", "visible_entries"]

ALL_GPUS_ENV = "RADTRACK_ALL_GPUS"


@dataclass(frozen=True)
class GpuDevice:
    """One GPU or MIG instance the run can use."""

    scope: str  # "gpu0": the CUDA index as the run sees it
    entry: str  # as written in CUDA_VISIBLE_DEVICES / --devices ("" when all GPUs were taken)
    handle: Any
    uuid: str
    name: str
    index: int | None = None  # NVML index of the physical GPU (of the parent for MIG)
    parent: Any = None  # physical GPU handle of a MIG instance
    gpu_instance_id: int | None = None  # MIG GPU instance, for per-instance GPM samples

    @property
    def is_mig(self) -> bool:
        return self.parent is not None


def _nvml_error() -> type[BaseException]:
    import pynvml

    return pynvml.NVMLError


def _device_count() -> int:
    return int(nvml_query("nvmlDeviceGetCount"))


def _physical(index: int) -> Any:
    return nvml_query("nvmlDeviceGetHandleByIndex", index)


def _index_of(handle: Any) -> int | None:
    idx = nvml_query("nvmlDeviceGetIndex", handle)
    return None if idx is NA else int(idx)


def _mig_children(parent: Any) -> list[Any]:
    """Every MIG instance handle that exists on a physical GPU ([] when MIG is off)."""
    count = nvml_query("nvmlDeviceGetMaxMigDeviceCount", parent)
    if count is NA:
        return []
    found = []
    for i in range(int(count)):
        try:
            h = nvml_query("nvmlDeviceGetMigDeviceHandleByIndex", parent, i)
        except _nvml_error():  # NotFound: an empty slot
            continue
        if h is not NA:
            found.append(h)
    return found


def _by_gpu_uuid(entry: str) -> Any:
    try:
        handle = nvml_query("nvmlDeviceGetHandleByUUID", entry)
        if handle is not NA:
            return handle
    except _nvml_error():
        pass
    # CUDA accepts any unique UUID prefix, so the run may have been given one.
    matches = [h for h in map(_physical, range(_device_count()))
               if uuid_matches(text(nvml_query("nvmlDeviceGetUUID", h)), entry)]
    if len(matches) == 1:
        return matches[0]
    why = "matches several GPUs" if matches else "matches no GPU"
    raise RadtrackError(f"device {entry!r} {why}; `nvidia-smi -L` lists the UUIDs")


def _mig_by_uuid(entry: str) -> tuple[Any, Any]:
    """(MIG handle, parent handle) for a MIG UUID, in modern or legacy form."""
    legacy = LEGACY_MIG_RE.match(entry)
    if legacy:
        parent = _by_gpu_uuid(legacy.group(1))
        gi, ci = int(legacy.group(2)), int(legacy.group(3))
        for h in _mig_children(parent):
            if (nvml_query("nvmlDeviceGetGpuInstanceId", h) == gi
                    and nvml_query("nvmlDeviceGetComputeInstanceId", h) == ci):
                return h, parent
        raise RadtrackError(f"device {entry!r}: no MIG instance gi={gi} ci={ci} on that GPU")
    try:
        h = nvml_query("nvmlDeviceGetHandleByUUID", entry)
        if h is not NA:
            return h, nvml_query("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", h)
    except _nvml_error():
        pass
    for i in range(_device_count()):
        parent = _physical(i)
        for h in _mig_children(parent):
            if text(nvml_query("nvmlDeviceGetUUID", h)) == entry:
                return h, parent
    raise RadtrackError(f"device {entry!r} matches no MIG instance; `nvidia-smi -L` lists them")


def _describe(scope: str, entry: str, handle: Any, parent: Any = None) -> GpuDevice:
    gi = None
    if parent is not None:
        got = nvml_query("nvmlDeviceGetGpuInstanceId", handle)
        gi = None if got is NA else int(got)
    return GpuDevice(scope=scope, entry=entry, handle=handle,
                     uuid=text(nvml_query("nvmlDeviceGetUUID", handle)),
                     name=text(nvml_query("nvmlDeviceGetName", handle)),
                     index=_index_of(parent if parent is not None else handle),
                     parent=parent, gpu_instance_id=gi)


def resolve(entries: list[str] | None) -> list[GpuDevice]:
    """NVML handles for the run's entries (None = every GPU); RadtrackError names a bad entry."""
    if entries is None:
        return [_describe(f"gpu{i}", "", _physical(i)) for i in range(_device_count())]
    out = []
    for pos, entry in enumerate(entries):
        scope = f"gpu{pos}"
        if entry.isdigit():
            count = _device_count()
            if int(entry) >= count:
                raise RadtrackError(f"device {entry!r} does not exist: NVML sees {count} GPU(s), "
                                    f"indices 0-{count - 1}")
            out.append(_describe(scope, entry, _physical(int(entry))))
        elif entry.startswith("GPU-"):
            out.append(_describe(scope, entry, _by_gpu_uuid(entry)))
        elif entry.startswith("MIG-"):
            handle, parent = _mig_by_uuid(entry)
            out.append(_describe(scope, entry, handle, parent))
        else:
            raise RadtrackError(f"device {entry!r} is not a GPU index, GPU-<uuid> or MIG-<uuid>")
    return out


def host_wide(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``RADTRACK_ALL_GPUS`` asks for every GPU of the host (``1``, ``true``, ``yes``)."""
    env = os.environ if environ is None else environ
    return env.get(ALL_GPUS_ENV, "").strip().lower() in ("1", "true", "yes")


def run_devices(devices: list[str], environ: Mapping[str, str] | None = None) -> list[GpuDevice]:
    """The GPUs a listener watches for a run configured with ``devices``: the run's own,
    or every GPU of the host where ``RADTRACK_ALL_GPUS`` asks for the host-wide view."""
    if host_wide(environ):
        return resolve(None)
    return resolve(visible_entries(devices, environ))


def gpu_at(index: int, scope: str) -> GpuDevice:
    """Physical NVML GPU ``index``, watched as ``scope`` (a GPU smi follows: gpu_follow.py)."""
    return _describe(scope, "", _physical(index))


def unwatched(watched: list[GpuDevice]) -> list[tuple[int, Any]]:
    """(NVML index, handle) of each physical GPU that none of ``watched`` is on (a watched
    MIG instance's parent counts as watched), leaving out GPUs in MIG mode: their
    contexts are listed per instance, so a look at the whole GPU would not find them."""
    taken = {d.index for d in watched}
    out = []
    for i in range(_device_count()):
        if i in taken:
            continue
        handle = _physical(i)
        if handle is NA or _mig_children(handle):
            continue
        out.append((i, handle))
    return out
