"""The GPUs a run turns out to use beyond its own: smi follows them (radtrack/listeners/smi.py).

A row's smi watches the GPUs its Devices cell (or ``CUDA_VISIBLE_DEVICES``) gives it
(radtrack/listeners/devices.py). A process of the run's tree may still use another one: a script
that sets its own ``CUDA_VISIBLE_DEVICES`` for a child, or that drops the one it was given.
So every :data:`FOLLOW_EVERY_S` smi lists the compute contexts of each GPU NVML sees that
the run does not watch (one ``nvmlDeviceGetComputeRunningProcesses`` per such GPU, about
0.2 ms; the run's process tree is walked only when some such GPU has a context at all).
Once a pid of the tree holds a context there, that GPU is watched from then on with every
reading of a watched GPU, under the next free scope after the run's own (``gpu<n>``; the
run's are ``gpu0`` .. ``gpu<n-1>``), tagged ``radtrack.listener.smi.gpu<n>.uuid``,
``.name``, ``.nvml_index`` and ``.followed`` (the unix time it was first seen): readers
count it among the run's GPUs from then (co-location accounting charges the run its
share of that GPU from that time). NVML cannot say when a context was made, so its
readings, its energy included, count from the look that found it (tag
``.energy_from`` = ``followed``): up to :data:`FOLLOW_EVERY_S` of the run's use before that
look is not counted. A listener that starts after the tree is already there (a late
start, a restart) finds it at its probe.

The listener's metrics grow when a GPU is followed: it sends a new hello with every
metric and tag (radtrack/listeners/runner.py), which replaces the first one wherever hellos are
read. A restarted listener follows the same GPUs under the same scopes with the same
``.followed`` time, whether or not the tree is still there: the look that found a GPU
leaves restart positions ``smi/<scope>/followed_nvml_index`` and
``smi/<scope>/followed_us`` (ListenerConfig.resume), read back by :func:`restored`.

Not followed: GPUs in MIG mode (contexts are listed per instance), and nothing in the
host-wide view, which watches every GPU already. The MPS clients' list is not read: a tree
that is an MPS client elsewhere is followed only where the driver lists it among the GPU's
compute processes. ``RADTRACK_FOLLOW_GPUS=0`` turns following off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from radtrack.listeners.base import Every
from radtrack.listeners.devices import GpuDevice, unwatched
from radtrack.listeners.nvml import NA, nvml_query

FOLLOW_ENV = "RADTRACK_FOLLOW_GPUS"
#: seconds between looks at the GPUs the run does not watch (the pace of the contexts'
#: check on a GPU the run has to itself, smi_reads.SOLO_PROCS_EVERY_S)
FOLLOW_EVERY_S = 5.0
INDEX_POSITION = "followed_nvml_index"  # resume key smi/<scope>/<this> -> NVML index
AT_POSITION = "followed_us"  # resume key smi/<scope>/<this> -> unix us it was followed


def follow_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether GPUs outside the run's are followed (not ``RADTRACK_FOLLOW_GPUS=0``)."""
    env = os.environ if environ is None else environ
    return env.get(FOLLOW_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def positions(listener: str, scope: str, index: int, at: float) -> dict[str, int]:
    """The restart positions that keep GPU ``index`` followed as ``scope`` since ``at``."""
    return {f"{listener}/{scope}/{INDEX_POSITION}": index,
            f"{listener}/{scope}/{AT_POSITION}": int(round(at * 1e6))}


def restored(listener: str, resume: Mapping[str, int]) -> list[tuple[str, int, float]]:
    """(scope, NVML index, unix time followed) of each GPU an earlier process of the
    listener followed, from its restart positions, in scope order."""
    out = []
    prefix = f"{listener}/"
    for key, index in resume.items():
        if not key.startswith(prefix) or not key.endswith(f"/{INDEX_POSITION}"):
            continue
        scope = key[len(prefix):-len(INDEX_POSITION) - 1]
        at = resume.get(f"{prefix}{scope}/{AT_POSITION}")
        if at is not None and scope.startswith("gpu") and scope[3:].isdigit():
            out.append((scope, int(index), int(at) / 1e6))
    return sorted(out, key=lambda x: int(x[0][3:]))


class GpuFollower:
    """The GPUs NVML sees that the run does not watch, looked at every FOLLOW_EVERY_S."""

    def __init__(self, watched: list[GpuDevice], interval: float):
        self.gate = Every(FOLLOW_EVERY_S, interval)
        self.candidates: list[tuple[int, Any]] = unwatched(watched)  # (NVML index, handle)

    def take(self, index: int) -> Any:
        """Stop looking at GPU ``index`` (it is watched now); its handle, None if unknown."""
        found = next((h for i, h in self.candidates if i == index), None)
        self.candidates = [(i, h) for i, h in self.candidates if i != index]
        return found

    def look(self, now: float, tree: Callable[[], set[int]], force: bool = False) -> list[int]:
        """NVML indices of the GPUs looked at where a pid of ``tree()`` holds a context now
        (none unless a look is due at ``now``, a monotonic time, or ``force``d)."""
        import pynvml

        if force:
            self.gate.force()
        if not self.candidates or not self.gate.due(now):
            return []
        pids: set[int] | None = None
        found = []
        for index, handle in self.candidates:
            try:
                procs = nvml_query("nvmlDeviceGetComputeRunningProcesses", handle)
            except pynvml.NVMLError:  # a GPU that does not answer now: not the run's concern
                continue
            if procs is NA or not procs:
                continue
            if pids is None:
                pids = tree()
            if any(p.pid in pids for p in procs):
                found.append(index)
        return found
