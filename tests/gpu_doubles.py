"""Autospec doubles of the pynvml functions the GPU listeners call.

Each double keeps the real function's signature (``create_autospec``) and answers from
a :class:`FakeGpu`, whose defaults are the readings recorded on the H100 in
tests/data/h100/ (nvml-probe.txt, nvidia-smi_-q.txt, nvml-per-process*.txt,
gpm-probe.txt). A handle is the FakeGpu object itself. The driver's power sample ring is
off by default (``power_ring`` None: not offered); tests that want it fill it with
:meth:`FakeGpu.take_power_samples` (H100: one sample each 20 ms, 119 deep).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from unittest.mock import create_autospec

import pynvml
import pytest

from radtrack.listeners import nvml

H100_UUID = "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"
H100_NAME = "NVIDIA H100 80GB HBM3"
MIB = 2**20

# gpm-probe.txt: metric id -> value over one second of bf16 matmul
H100_GPM = {1: 43.23333500447723, 2: 56.54965467420187, 3: 8.359965840152201,
            5: 54.87252382716707, 10: 7.245520612476356, 12: 0.0015133108405443237, 13: 0.0}


@dataclass(eq=False)
class FakeGpu:
    uuid: str = H100_UUID
    name: str = H100_NAME
    # nvml-probe.txt: field 186 (instant) 73183 mW, 185 (average) 73795 mW; -q: memory 39 C
    fields: dict[int, float] = field(default_factory=lambda: {186: 73183, 185: 73795, 82: 39})
    power_mw: int = 69940
    energy_mj: float = 1_000_000.0
    energy_step_mj: float = 6983.0  # ~69.8 W idle (nvml-probe.txt) over 100 ms
    util: tuple[int, int] = (0, 0)
    mem_used: int = 0
    mem_total: int = 81559 * MIB
    temp_c: int = 38
    sm_mhz: int = 345
    mem_mhz: int = 2619
    pstate: int = 0
    fan_pct: int = 0
    reasons: int = 0x1  # idle, as in nvidia-smi_-q.txt
    ecc: tuple[int, int] = (0, 0)
    pcie_kbs: tuple[int, int] = (54699, 73807)  # nvml-per-process.txt
    procs: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, usedGpuMemory B)
    mps_procs: list[tuple[int, int]] = field(default_factory=list)  # MPS clients (pid, B)
    names: dict[int, str] = field(default_factory=dict)  # pid -> NVML's process name
    putil: list[tuple[int, int, int, int]] = field(default_factory=list)  # pid, ts us, sm, mem
    unsupported: set[str] = field(default_factory=set)  # pynvml function names
    gpm: dict[int, float] | None = field(default_factory=lambda: dict(H100_GPM))
    mig: list[FakeGpu] = field(default_factory=list)
    parent: FakeGpu | None = None
    gi: int = 0
    ci: int = 0
    power_ring: list[tuple[int, int]] | None = None  # driver power samples (timestamp us, mW)
    ring_depth: int = 119  # driver-buffers.md: 119 samples, 20 ms apart
    ring_tick: int = 0  # samples the driver takes (20 ms apart) before each read of the ring
    # field 83 (NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION) answers with the energy counter, each
    # read advancing it as nvmlDeviceGetTotalEnergyConsumption does
    energy_field: bool = False

    def take_power_samples(self, n: int, start_us: int, every_us: int = 20_000,
                           mw: int | list[int] = 300_000) -> list[tuple[int, int]]:
        """The driver takes ``n`` power samples from ``start_us``; the ring keeps the newest
        ``ring_depth``. Returns the samples taken."""
        if self.power_ring is None:
            self.power_ring = []
        values = mw if isinstance(mw, list) else [mw]
        new = [(start_us + i * every_us, values[i % len(values)]) for i in range(n)]
        self.power_ring = (self.power_ring + new)[-self.ring_depth:]
        return new


def _not_supported() -> pynvml.NVMLError:
    return pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


class FakeNvml:
    """Installs the doubles on the pynvml module for one test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, gpus: list[FakeGpu]):
        self.gpus = gpus
        self.calls: dict[str, Any] = {}
        self._gpm_owner: dict[int, FakeGpu] = {}
        nvml.reset()
        for name in dir(self):
            if name.startswith("nvml"):
                impl = getattr(self, name)
                double = create_autospec(_REAL[name], side_effect=impl)
                self.calls[name] = double
                monkeypatch.setattr(pynvml, name, double)

    def count(self, func: str, handle: FakeGpu | None = None) -> int:
        """Calls of ``func`` so far, all of them or those on ``handle`` (its first argument):
        what tests assert a reading's pace by."""
        calls = self.calls[func].call_args_list
        if handle is None:
            return len(calls)
        return sum(1 for c in calls if c.args and c.args[0] is handle)

    def counts(self, handle: FakeGpu | None = None) -> dict[str, int]:
        """Every NVML function called so far -> its calls (on ``handle`` only, when given)."""
        return {f: n for f in self.calls if (n := self.count(f, handle))}

    def reset_counts(self) -> None:
        for double in self.calls.values():
            double.reset_mock()

    def _check(self, handle: FakeGpu, func: str) -> None:
        if func in handle.unsupported:
            raise _not_supported()

    def _all(self) -> list[FakeGpu]:
        return [*self.gpus, *(m for g in self.gpus for m in g.mig)]

    # -- init and handles ------------------------------------------------------------
    def nvmlInit(self) -> None:
        return None

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        if index >= len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> FakeGpu:
        for g in self._all():
            if g.uuid == uuid:
                return g
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetIndex(self, handle: FakeGpu) -> int:
        return self.gpus.index(handle)

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str:
        return handle.uuid

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str:
        return handle.name

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeGpu) -> int:
        return 7 if handle.mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeGpu, index: int) -> FakeGpu:
        if index >= len(device.mig):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return device.mig[index]

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice: FakeGpu) -> FakeGpu:
        assert migDevice.parent is not None
        return migDevice.parent

    def nvmlDeviceGetGpuInstanceId(self, device: FakeGpu) -> int:
        return device.gi

    def nvmlDeviceGetComputeInstanceId(self, device: FakeGpu) -> int:
        return device.ci

    # -- readings --------------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, handle: FakeGpu, fieldIds: list[int]) -> Any:
        self._check(handle, "nvmlDeviceGetFieldValues")
        values = (pynvml.c_nvmlFieldValue_t * len(fieldIds))()
        for i, fid in enumerate(fieldIds):
            values[i].fieldId = fid
            if fid == pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION and handle.energy_field:
                values[i].valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                values[i].value.ullVal = int(self._energy(handle))
                values[i].nvmlReturn = pynvml.NVML_SUCCESS
            elif fid in handle.fields:
                values[i].valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                values[i].value.ullVal = int(handle.fields[fid])
                values[i].nvmlReturn = pynvml.NVML_SUCCESS
            else:
                values[i].nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
        return values

    def nvmlDeviceGetPowerUsage(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetPowerUsage")
        return handle.power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetTotalEnergyConsumption")
        return int(self._energy(handle))

    def _energy(self, handle: FakeGpu) -> float:
        """The energy counter (mJ) at a read: one step further each time."""
        handle.energy_mj += handle.energy_step_mj
        return handle.energy_mj

    def nvmlDeviceGetSamples(self, device: FakeGpu, sampling_type: int, timeStamp: int) -> Any:
        self._check(device, "nvmlDeviceGetSamples")
        if sampling_type != pynvml.NVML_TOTAL_POWER_SAMPLES or device.power_ring is None:
            raise _not_supported()
        if device.ring_tick:  # time passed since the previous read
            last = device.power_ring[-1][0] if device.power_ring else 1_795_323_300_000_000
            device.take_power_samples(device.ring_tick, last + 20_000)
        newer = [(t, mw) for t, mw in device.power_ring if t > timeStamp]
        if not newer:  # the driver's answer when nothing is newer than timeStamp
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        out = []
        for t, mw in newer:
            smp = pynvml.c_nvmlSample_t()
            smp.timeStamp = t
            smp.sampleValue.uiVal = mw
            out.append(smp)
        return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, out

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> Any:
        self._check(handle, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=handle.util[0], memory=handle.util[1])

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu, version: Any = None) -> Any:
        self._check(handle, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(used=handle.mem_used, total=handle.mem_total,
                               free=handle.mem_total - handle.mem_used)

    def nvmlDeviceGetTemperature(self, handle: FakeGpu, sensor: int) -> int:
        self._check(handle, "nvmlDeviceGetTemperature")
        return handle.temp_c

    def nvmlDeviceGetClockInfo(self, handle: FakeGpu, type: int) -> int:
        self._check(handle, "nvmlDeviceGetClockInfo")
        return handle.sm_mhz if type == pynvml.NVML_CLOCK_SM else handle.mem_mhz

    def nvmlDeviceGetPerformanceState(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetPerformanceState")
        return handle.pstate

    def nvmlDeviceGetFanSpeed(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetFanSpeed")
        return handle.fan_pct

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetCurrentClocksEventReasons")
        return handle.reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeGpu) -> int:
        self._check(handle, "nvmlDeviceGetCurrentClocksThrottleReasons")
        return handle.reasons

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeGpu, errorType: int, counterType: int) -> int:
        self._check(handle, "nvmlDeviceGetTotalEccErrors")
        return handle.ecc[errorType]

    def nvmlDeviceGetPcieThroughput(self, device: FakeGpu, counter: int) -> int:
        self._check(device, "nvmlDeviceGetPcieThroughput")
        return device.pcie_kbs[counter]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        self._check(handle, "nvmlDeviceGetComputeRunningProcesses")
        return [SimpleNamespace(pid=pid, usedGpuMemory=used, gpuInstanceId=0xFFFFFFFF,
                                computeInstanceId=0xFFFFFFFF) for pid, used in handle.procs]

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        self._check(handle, "nvmlDeviceGetMPSComputeRunningProcesses")
        return [SimpleNamespace(pid=pid, usedGpuMemory=used, gpuInstanceId=0xFFFFFFFF,
                                computeInstanceId=0xFFFFFFFF) for pid, used in handle.mps_procs]

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for g in self._all():
            if pid in g.names:
                return g.names[pid]
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetProcessUtilization(self, handle: FakeGpu, timeStamp: int) -> list[Any]:
        self._check(handle, "nvmlDeviceGetProcessUtilization")
        newer = [s for s in handle.putil if s[1] > timeStamp]
        if not newer:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return [SimpleNamespace(pid=p, timeStamp=ts, smUtil=sm, memUtil=mem, encUtil=0, decUtil=0)
                for p, ts, sm, mem in newer]

    # -- GPM -------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, device: FakeGpu) -> Any:
        return SimpleNamespace(version=1, isSupportedDevice=int(device.gpm is not None))

    def nvmlGpmSampleAlloc(self) -> Any:
        return pynvml.c_nvmlGpmSample_t(pynvml.struct_c_nvmlGpmSample_t())

    def nvmlGpmSampleFree(self, gpmSample: Any) -> None:
        return None

    def nvmlGpmSampleGet(self, device: FakeGpu, gpmSample: Any) -> Any:
        if device.gpm is None:
            raise _not_supported()
        self._gpm_owner[ctypes.addressof(gpmSample.contents)] = device
        return gpmSample

    def nvmlGpmMigSampleGet(self, device: FakeGpu, gpuInstanceId: int, gpmSample: Any) -> Any:
        inst = next(m for m in device.mig if m.gi == gpuInstanceId)
        self._gpm_owner[ctypes.addressof(gpmSample.contents)] = inst
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:
        a = self._gpm_owner[ctypes.addressof(metricsGet.sample1.contents)]
        b = self._gpm_owner[ctypes.addressof(metricsGet.sample2.contents)]
        assert a is b, "GPM metrics asked between samples of two different devices"
        gpm = a.gpm if a.gpm is not None else (a.parent.gpm if a.parent else None)
        assert gpm is not None
        for i in range(metricsGet.numMetrics):
            m = metricsGet.metrics[i]
            if m.metricId in gpm:
                m.value, m.nvmlReturn = gpm[m.metricId], pynvml.NVML_SUCCESS
            else:
                m.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
        return metricsGet


# the real functions, captured before any test replaces them, give the doubles their signatures
_REAL = {name: getattr(pynvml, name) for name in dir(FakeNvml) if name.startswith("nvml")}


def mig_gpu(n: int = 2) -> FakeGpu:
    """An H100 in MIG mode with ``n`` 1g.10gb instances (ids as `nvidia-smi -L` prints them)."""
    parent = FakeGpu()
    for i in range(n):
        parent.mig.append(FakeGpu(uuid=f"MIG-7f1e0c3a-0000-5000-8000-00000000000{i}",
                                  name=f"{H100_NAME} MIG 1g.10gb", parent=parent, gi=7 + i,
                                  fields={}, gpm=None,
                                  unsupported={"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage",
                                               "nvmlDeviceGetTotalEnergyConsumption",
                                               "nvmlDeviceGetTemperature", "nvmlDeviceGetFanSpeed",
                                               "nvmlDeviceGetProcessUtilization"}))
    return parent
