"""The run's own share of a GPU, and everyone else's, from NVML's per-process readings.

Read once a second by smi where the GPU is shared (``nvmlDeviceGetProcessUtilization``
costs ~1.9 ms on an H100; the driver keeps every sample since the timestamp passed, so
nothing is lost):

- ``proc_mem_used_mib``: device memory of the run's process tree;
- ``proc_sm_util_pct``: SM utilisation of the run's process tree; never for an MPS client
  (NVML accounts an MPS client's SM work to the MPS server and reports the client at 0 or
  not at all, recorded on the H100 in shared/fixtures/nvidia/h100/mps/);
- ``all_procs_sm_util_pct``: SM utilisation of every process on the device (the MPS
  server's included), so co-location accounting can tell processes outside radtrack;
- ``mps_sm_util_pct``: the MPS server's SM utilisation, for a run that is an MPS client.

On a GPU the run has to itself (``solo``: no co-located row, not an MPS client) only the
list of contexts is read (``proc_mem_used_mib``; 0.2 ms), every few seconds: the SM
shares only split a GPU's energy among those sharing it. Once a process outside the
run's tree holds a context there, the GPU is shared from then on; the first SM reading
averages the driver's samples back to the previous check (co-location accounting reads it
as the last second's), so at most that check's 5 s of the newcomer's arrival go to the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radtrack.listeners.nvml import NA, nvml_query, text

_MIB = 2**20
MPS_SERVER = "nvidia-cuda-mps-server"
MPS_CLIENT_REASON = "MPS client: NVML accounts its SM work to the MPS server"


def process_name(pid: int) -> str:
    """The process's name as NVML knows it (its pids are the driver's, which a container's
    /proc may not share), else /proc's comm (15 characters at most)."""
    try:
        name = nvml_query("nvmlSystemGetProcessName", pid)
    except Exception:  # noqa: BLE001 - NotFound and the like: try /proc
        name = NA
    if name is not NA and name:
        return text(name)
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def is_mps_server(pid: int, cache: dict[int, bool]) -> bool:
    if pid not in cache:
        name = process_name(pid)
        cache[pid] = bool(name) and MPS_SERVER.startswith(Path(name).name[:15])
    return cache[pid]


@dataclass
class ProcessShare:
    """Per-device state of the per-process readings."""

    handle: Any
    util_ts: int = 0  # last process-utilisation timestamp seen (us)
    # every pid ever seen in the run's tree: the final reading, taken after the script
    # exited, still finds its last second of samples under the pid that is gone now
    known: set[int] = field(default_factory=set)
    mps_client: bool = False  # the tree was seen as an MPS client (stays so after it exits)
    solo: bool = False  # only the contexts are read, until another process holds one
    checked_us: int = 0  # wall clock (us) of the last contexts' check while solo

    def supported(self) -> tuple[bool, bool]:
        """(memory, SM utilisation) readings answer on this device."""
        mem = nvml_query("nvmlDeviceGetComputeRunningProcesses", self.handle) is not NA
        return mem, self.samples() is not NA

    def samples(self) -> Any:
        """Process-utilisation samples newer than the last seen; NA when unsupported."""
        import pynvml

        try:
            samples = nvml_query("nvmlDeviceGetProcessUtilization", self.handle, self.util_ts)
        except pynvml.NVMLError as exc:
            # NotFound (or a bare SUCCESS with no buffer): no process sampled since util_ts
            if exc.value in (pynvml.NVML_ERROR_NOT_FOUND, pynvml.NVML_SUCCESS):
                return []
            raise
        if samples is not NA and samples:
            self.util_ts = max(int(s.timeStamp) for s in samples)
        return samples

    def read(self, tree: set[int], servers: dict[int, bool]) -> dict[str, float]:
        out: dict[str, float] = {}
        self.known |= tree
        gone = self.known - tree  # exited members: no memory any more, samples until they left
        procs = nvml_query("nvmlDeviceGetComputeRunningProcesses", self.handle)
        ours_on_gpu = False
        if procs is not NA:
            ours = [p for p in procs if p.pid in tree]
            ours_on_gpu = bool(ours)
            # usedGpuMemory is None where the driver cannot tell (Windows WDDM)
            if all(p.usedGpuMemory is not None for p in ours):
                out["proc_mem_used_mib"] = sum(p.usedGpuMemory for p in ours) / _MIB
        if self.solo:
            if procs is NA or all(p.pid in self.known for p in procs):
                self.checked_us = int(time.time() * 1e6)
                return out
            # someone else holds a context: shared from now on, its share read back to
            # the previous check (the driver keeps the samples since then)
            self.solo = False
            self.util_ts = max(self.util_ts, self.checked_us)
        mps = nvml_query("nvmlDeviceGetMPSComputeRunningProcesses", self.handle)
        self.mps_client |= mps is not NA and any(p.pid in tree for p in mps)
        samples = self.samples()
        if samples is NA:
            return out
        per_pid: dict[int, list[float]] = {}
        for s in samples:
            per_pid.setdefault(s.pid, []).append(float(s.smUtil))
        mean = {pid: sum(v) / len(v) for pid, v in per_pid.items()}
        if procs is not NA or mean:
            out["all_procs_sm_util_pct"] = sum(mean.values())
        if self.mps_client:
            server = [u for pid, u in mean.items()
                      if pid not in self.known and is_mps_server(pid, servers)]
            if server or procs is not NA:
                out["mps_sm_util_pct"] = sum(server)
            return out  # no per-client SM figure: absent, never a made-up 0
        ours_util = [u for pid, u in mean.items() if pid in tree or pid in gone]
        if ours_util:
            out["proc_sm_util_pct"] = sum(ours_util)
        elif not ours_on_gpu and procs is not NA:
            out["proc_sm_util_pct"] = 0.0  # the tree has no context on this GPU at all
        # else: the tree is on the GPU but NVML sampled nothing of it: no reading
        return out
