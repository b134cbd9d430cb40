"""smi: per-GPU power, energy, utilisation, memory, clocks, temperatures and the run's
own GPU memory and SM share, straight from NVML (no nvidia-smi parsing).

Every reading is tried once in :meth:`SmiListener.probe`; what a device does not offer
is listed in the ``radtrack.listener.smi.unsupported`` tag and never emitted.

Readings are taken at the pace their source changes, so a 10 Hz sampler pays for no
duplicate readings (CPU per call measured on an H100 under load by
benchmarks/listener_costs.py; a call costs 10-20x its idle floor while the GPU computes):
- every interval: instantaneous power (the sensor refreshes every 100 ms; every 1 s where
  the driver's power sample buffer is read instead, below), SM clock and clock-event
  reasons (25-60 us each): what a power cap or a thermal brake moves within milliseconds;
- every 0.2 s: GPU and memory utilisation (the driver refreshes them 5 times a second;
  390 us a call) and device memory in use (80 us a call under load; the caching
  allocators of PyTorch and JAX change it in steps, not continuously);
- every 1 s: GPU temperature (whole degrees, moving over seconds), memory clock (fixed
  but for P-state changes, read beside the P-state), the 1-s average power, memory
  temperature, PCIe byte counters (as a rate over the second; 370 us each, in the same
  ``nvmlDeviceGetFieldValues`` call as the other fields), pstate, fan, ECC, and the
  per-process readings of listeners/gpuprocs.py (the run's own GPU memory and SM share,
  every process's SM share, the MPS server's; 200 us and 1.9 ms a read): the driver keeps
  every utilisation sample since the last read, so each reading is the mean over all of
  them, none skipped. Every 2 s for these was tried and not kept: it saves about
  0.1 % of a core on the H100 but halves the resolution of the per-process SM share that
  co-location and code-window accounting split energy by, in 1-s windows;
- every 5 s, at the first and at the final reading: the energy counter (3.9-5 ms of CPU a
  read; a counter, so the run's total is exact whatever the pace: the first and the final
  reading bound it, the ones between only place it in time; ``energy_j`` counts from the
  run's start, recovered back to it by listeners/energy_backfill.py);
- every 10 s, at the first and at the final reading, and only on a GPU without the PCIe
  byte counters: ``nvmlDeviceGetPcieThroughput`` (0.9 ms of CPU and ~20 ms of wall time a
  direction: it samples the link for 20 ms, which would hold up every other reading of
  the sampler; PCIE_THROUGHPUT_EVERY_S).

A reading the device answers "not supported" at the probe (an H100 has no fan) is never
asked again (:meth:`_DeviceState.query`): the answer costs as much as a reading, 0.4-0.6 ms
for the fan under load. (Reading the power sample ring and the per-process readings in one
driver call instead of pynvml's two was tried and not kept: the size query is cheap, the
filling call is what costs; docs/performance.md.)

Where the GPU offers it (H100: about 50 samples a second), the driver's own power sample
buffer is read once a second (listeners/driver_samples.py) and every sample is emitted
once, with the driver's timestamp, as ``power_sample_w`` on sample lines of its own
(:class:`~radtrack.listeners.base.TimedSample`); across a listener restart reading picks
up after the last sample emitted (``ListenerConfig.resume``).

A MIG instance has no power sensor of its own: its power and energy readings are the
parent GPU's (tag ``radtrack.listener.smi.<scope>.parent_uuid``), which co-location
accounting shares out among the instances.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from radtrack.listeners.base import (
    HOST_SAMPLER,
    Availability,
    Every,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
    TimedSample,
    rate_window,
)
from radtrack.listeners.devices import GpuDevice, run_devices
from radtrack.listeners.driver_samples import READ_EVERY_S, DriverSamples
from radtrack.listeners.energy_backfill import Backfill, backfill
from radtrack.listeners.gpuprocs import MPS_CLIENT_REASON, ProcessShare
from radtrack.listeners.nvml import NA, nvml_available, nvml_query, text
from radtrack.listeners.proctree import ProcessTree

FI_MEMORY_TEMP = 82
FI_POWER_AVERAGE = 185
FI_POWER_INSTANT = 186
FI_PCIE_TX_BYTES = 197
FI_PCIE_RX_BYTES = 198
_FIELDS = (FI_POWER_INSTANT, FI_POWER_AVERAGE, FI_MEMORY_TEMP, FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES)

# clock-event ("throttle") reason bits, nvmlClocksEventReason*
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
_PSTATE_UNKNOWN = 32
_MIB = 2**20
UTIL_EVERY_S = 0.2
SLOW_EVERY_S = 1.0
ENERGY_EVERY_S = 5.0
PCIE_THROUGHPUT_EVERY_S = 10.0  # the blocking fallback, where the byte counters are absent
_FAST_FIELDS = (FI_POWER_INSTANT,)

# quantity -> (unit, description, source)
QUANTITIES: dict[str, tuple[str, str, str]] = {
    "power_w": ("W", "board power draw, instantaneous",
                "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT), else nvmlDeviceGetPowerUsage"),
    "power_sample_w": ("W", "board power draw, every sample the driver took (~50/s on H100), "
                       "each at its own driver timestamp, read once a second",
                       "nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES, last seen timestamp)"),
    "power_avg_w": ("W", "board power draw averaged by the driver over 1 s",
                    "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_AVERAGE)"),
    "energy_j": ("J", "energy used since the run started (hardware counter)",
                 "nvmlDeviceGetTotalEnergyConsumption"),
    "gpu_util_pct": ("%", "time a kernel was running", "nvmlDeviceGetUtilizationRates.gpu"),
    "mem_util_pct": ("%", "time device memory was read or written", "nvmlDeviceGetUtilizationRates.memory"),
    "mem_used_mib": ("MiB", "device memory in use, all processes", "nvmlDeviceGetMemoryInfo.used"),
    "mem_total_mib": ("MiB", "device memory size", "nvmlDeviceGetMemoryInfo.total"),
    "temp_c": ("°C", "GPU core temperature", "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)"),
    "mem_temp_c": ("°C", "HBM/memory temperature", "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)"),
    "sm_clock_mhz": ("MHz", "SM clock", "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)"),
    "mem_clock_mhz": ("MHz", "memory clock", "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)"),
    "pstate_level": ("P-state", "performance state, 0 = fastest", "nvmlDeviceGetPerformanceState"),
    "fan_pct": ("%", "fan speed", "nvmlDeviceGetFanSpeed"),
    "clock_reasons_mask": ("bitmask", "clock-event (throttle) reasons, nvmlClocksEventReason* bits",
                           "nvmlDeviceGetCurrentClocksEventReasons"),
    "throttle_sw_power_cap_flag": ("0/1", "clocks held down by the software power cap",
                                   "nvmlDeviceGetCurrentClocksEventReasons & 0x4"),
    "throttle_hw_slowdown_flag": ("0/1", "hardware slowdown (thermal or power brake)",
                                  "nvmlDeviceGetCurrentClocksEventReasons & 0x8"),
    "throttle_thermal_flag": ("0/1", "software or hardware thermal slowdown",
                              "nvmlDeviceGetCurrentClocksEventReasons & 0x60"),
    "pcie_tx_bytes_per_s": ("B/s", "PCIe bytes sent by the GPU",
                            "nvmlDeviceGetFieldValues(NVML_FI_DEV_PCIE_COUNT_TX_BYTES), else nvmlDeviceGetPcieThroughput"),
    "pcie_rx_bytes_per_s": ("B/s", "PCIe bytes received by the GPU",
                            "nvmlDeviceGetFieldValues(NVML_FI_DEV_PCIE_COUNT_RX_BYTES), else nvmlDeviceGetPcieThroughput"),
    "ecc_corrected_volatile_count": ("count", "corrected ECC errors since the driver loaded",
                                     "nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE)"),
    "ecc_uncorrected_volatile_count": ("count", "uncorrected ECC errors since the driver loaded",
                                       "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)"),
    "proc_mem_used_mib": ("MiB", "device memory of the run's process tree",
                          "nvmlDeviceGetComputeRunningProcesses"),
    "proc_sm_util_pct": ("%", "SM utilisation of the run's process tree (never for an MPS client)",
                         "nvmlDeviceGetProcessUtilization"),
    "all_procs_sm_util_pct": ("%", "SM utilisation of every process on the device, summed",
                              "nvmlDeviceGetProcessUtilization"),
    "mps_sm_util_pct": ("%", "SM utilisation of the MPS server the run is a client of",
                        "nvmlDeviceGetProcessUtilization + nvmlDeviceGetMPSComputeRunningProcesses"),
}
# quantity -> (role, scope, label, unit as a reader needs it): what each series is
# (listeners/base.py ROLES, SCOPES); docs/metrics.md is checked against it
MEANINGS: dict[str, tuple[str, str, str, str]] = {
    "power_w": ("device_power", "device", "GPU power", "W"),
    "power_sample_w": ("device_power", "device", "GPU power, driver samples", "W"),
    "power_avg_w": ("device_power", "device", "GPU power, 1-s average", "W"),
    "energy_j": ("energy_counter", "device", "GPU energy counter", "J"),
    "gpu_util_pct": ("utilisation", "device", "GPU utilisation", "% of time a kernel ran"),
    "mem_util_pct": ("utilisation", "device", "GPU memory utilisation", "% of time memory was busy"),
    "mem_used_mib": ("memory", "device", "GPU memory used, all processes", "MiB"),
    "mem_total_mib": ("memory", "device", "GPU memory size", "MiB"),
    "temp_c": ("temperature", "device", "GPU temperature", "°C"),
    "mem_temp_c": ("temperature", "device", "GPU memory temperature", "°C"),
    "sm_clock_mhz": ("clock", "device", "GPU SM clock", "MHz"),
    "mem_clock_mhz": ("clock", "device", "GPU memory clock", "MHz"),
    "pstate_level": ("clock", "device", "GPU P-state", "P-state, 0 = fastest"),
    "fan_pct": ("other", "device", "GPU fan speed", "% of maximum"),
    "clock_reasons_mask": ("other", "device", "GPU clock-event reasons", "bitmask"),
    "throttle_sw_power_cap_flag": ("other", "device", "GPU held by the power cap", "0/1"),
    "throttle_hw_slowdown_flag": ("other", "device", "GPU hardware slowdown", "0/1"),
    "throttle_thermal_flag": ("other", "device", "GPU thermal slowdown", "0/1"),
    "pcie_tx_bytes_per_s": ("io", "device", "GPU PCIe sent", "B/s"),
    "pcie_rx_bytes_per_s": ("io", "device", "GPU PCIe received", "B/s"),
    "ecc_corrected_volatile_count": ("other", "device", "GPU corrected ECC errors", "errors"),
    "ecc_uncorrected_volatile_count": ("other", "device", "GPU uncorrected ECC errors", "errors"),
    "proc_mem_used_mib": ("memory", "device_share", "run's GPU memory", "MiB"),
    "proc_sm_util_pct": ("proc_share", "device_share", "run's GPU SM share", "% of the GPU's SM time"),
    "all_procs_sm_util_pct": ("proc_share", "device", "every process's GPU SM share",
                              "% of the GPU's SM time"),
    "mps_sm_util_pct": ("proc_share", "device", "MPS server's GPU SM share", "% of the GPU's SM time"),
}
SERIES = tuple(Series(f"smi/gpu<i>/{q}", unit, *MEANINGS[q], description=desc, source=source)
               for q, (unit, desc, source) in QUANTITIES.items())
_SERIES = {s.pattern.rsplit("/", 1)[1]: s for s in SERIES}
PROCESS_QUANTITIES = ("proc_mem_used_mib", "proc_sm_util_pct", "all_procs_sm_util_pct",
                      "mps_sm_util_pct")
_UTIL_QUANTITIES = PROCESS_QUANTITIES[1:]


def field_value(fv: Any) -> float | None:
    """The number in one c_nvmlFieldValue_t, None when NVML returned an error for it."""
    if fv.nvmlReturn != 0:
        return None
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[fv.valueType]
    return float(getattr(fv.value, member))


@dataclass
class _DeviceState:
    dev: GpuDevice
    interval: float
    fields: list[int] = field(default_factory=list)  # field ids this device answers
    keys: dict[str, str] = field(default_factory=dict)  # supported quantity -> metric key
    energy0_mj: float | None = None
    energy0_at: float = 0.0  # unix s of that first counter reading
    pcie_prev: tuple[float, float, float] | None = None  # (monotonic s, tx bytes, rx bytes)
    power_buffer: DriverSamples | None = None  # None: the device offers none, power is polled
    backfill: Backfill | None = None  # energy from the run's start to the first counter reading
    procs: ProcessShare = field(init=False)
    util: Every = field(init=False)
    slow: Every = field(init=False)
    energy: Every = field(init=False)
    buffer: Every = field(init=False)
    pcie: Every = field(init=False)
    # NVML calls (function and arguments) that answered "not available" while probing: a
    # device without a fan, ECC or an older name never answers them later, and asking costs
    # (nvmlDeviceGetFanSpeed: 380-570 us a call on an H100 that has no fan)
    absent: set[tuple[Any, ...]] = field(default_factory=set)
    probed: bool = False

    def query(self, func: str, *args: Any) -> Any:
        """``nvml_query(func, *args)``, NA without asking for a call found absent at the probe."""
        call = (func, *args[1:])  # the handle is the device's own
        if call in self.absent:
            return NA
        value = nvml_query(func, *args)
        if value is NA and not self.probed:
            self.absent.add(call)
        return value

    def __post_init__(self) -> None:
        self.procs = ProcessShare(self.dev.handle)
        self.util = Every(UTIL_EVERY_S, self.interval)
        self.slow = Every(SLOW_EVERY_S, self.interval)
        self.energy = Every(ENERGY_EVERY_S, self.interval)
        self.buffer = Every(READ_EVERY_S, self.interval)
        self.pcie = Every(PCIE_THROUGHPUT_EVERY_S, self.interval)

    def force(self) -> None:
        for gate in (self.util, self.slow, self.energy, self.buffer, self.pcie):
            gate.force()


class SmiListener(Listener):
    name = "smi"
    series = SERIES

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.tree = ProcessTree(config.pid) if config.pid is not None else None
        self._states: list[_DeviceState] = []
        self._supported: dict[str, set[str]] = {}  # scope -> quantities
        self._unsupported: list[str] = []
        self._mps_servers: dict[int, bool] = {}
        self._timed: list[TimedSample] = []  # driver power samples not yet handed out
        # an MPS client (the launcher gives MPS rows the daemon's pipe directory) has no SM
        # figure of its own: NVML accounts its work to the server
        self.mps_client = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))
        self.clock = time.monotonic  # replaceable in tests

    @classmethod
    def available(cls) -> Availability:
        return nvml_available()

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        return HOST_SAMPLER  # one NVML session serves dcgm's GPM backend as well

    def probe(self) -> list[MetricSpec]:
        self._states = [_DeviceState(d, self.config.interval) for d in run_devices(self.config.devices)]
        specs = []
        since = None if self.config.resume else self.config.since  # a restart does not reach back
        for st in self._states:
            fvs = nvml_query("nvmlDeviceGetFieldValues", st.dev.handle, list(_FIELDS))
            if fvs is not NA:
                st.fields = [fid for fid, fv in zip(_FIELDS, fvs, strict=True)
                             if field_value(fv) is not None]
            key = f"smi/{st.dev.scope}/power_sample_w"
            buf = DriverSamples(st.dev.parent if st.dev.is_mig else st.dev.handle)
            if buf.open(self.config.resume.get(key), None if since is None else int(since * 1e6)):
                st.power_buffer = buf
            first = self._read(st, self.clock())
            if since is not None and st.energy0_mj is not None:  # the counter answered
                st.backfill = backfill(buf.history, since, st.energy0_at, first.get("power_w"))
                if st.backfill is not None:  # energy_j counts from the run's start: 0 J there
                    st.energy0_mj -= st.backfill.joules * 1000.0
                    self._timed.append(TimedSample(since, {f"smi/{st.dev.scope}/energy_j": 0.0}))
            wanted = [q for q in QUANTITIES if self.tree is not None or q not in PROCESS_QUANTITIES]
            ok = {q for q in wanted if q in first}
            ok |= {"power_sample_w"} if st.power_buffer is not None else set()
            # rates and per-process readings need a previous reading, so they are judged
            # by whether their source answered at all
            ok |= {q for q in ("pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s") if st.pcie_prev or q in first}
            if self.tree is not None:
                mem, util = st.procs.supported()
                ok |= {"proc_mem_used_mib"} if mem else set()
                ok |= set(_UTIL_QUANTITIES) if util else set()
                if self.mps_client:
                    ok.discard("proc_sm_util_pct")
                else:
                    ok.discard("mps_sm_util_pct")
            self._supported[st.dev.scope] = ok
            st.keys = {q: f"smi/{st.dev.scope}/{q}" for q in QUANTITIES if q in ok}
            self._unsupported += [f"{st.dev.scope}/{q}" for q in wanted if q not in ok]
            st.probed = True
            for q in wanted:
                if q in ok:
                    specs.append(_SERIES[q].spec(f"smi/{st.dev.scope}/{q}"))
        for st in self._states:  # the first sample reads everything again
            st.force()
        return specs

    def tags(self) -> dict[str, str]:
        out = {"radtrack.listener.smi.unsupported": ",".join(self._unsupported)}
        for st in self._states:
            prefix = f"radtrack.listener.smi.{st.dev.scope}"
            out[f"{prefix}.uuid"] = st.dev.uuid
            out[f"{prefix}.name"] = st.dev.name
            if st.dev.index is not None:
                out[f"{prefix}.nvml_index"] = str(st.dev.index)
            if st.dev.is_mig:
                out[f"{prefix}.mig"] = "true"
                parent = nvml_query("nvmlDeviceGetUUID", st.dev.parent)
                if parent is not NA:
                    out[f"{prefix}.parent_uuid"] = text(parent)
            if self.mps_client and self.tree is not None:
                out[f"{prefix}.proc_sm_util_pct"] = f"absent: {MPS_CLIENT_REASON}"
            if st.backfill is not None:
                out.update(st.backfill.tags(prefix))
        return out

    def sample(self) -> dict[str, float]:
        now = self.clock()
        out: dict[str, float] = {}
        tree_pids: set[int] | None = None
        for st in self._states:
            slow = st.slow.due(now)
            values = self._read(st, now, slow)
            if self.tree is not None and slow:
                if tree_pids is None:
                    tree_pids = set(self.tree.pids())
                values.update(st.procs.read(tree_pids, self._mps_servers))
            keys = st.keys
            out.update({keys[q]: v for q, v in values.items() if q in keys})
            if st.power_buffer is not None and st.buffer.due(now):
                self._timed += _timed(f"smi/{st.dev.scope}/power_sample_w", st.power_buffer)
        return out

    def timed_samples(self) -> list[TimedSample]:
        out, self._timed = self._timed, []
        return out

    def final_sample(self) -> dict[str, float]:
        for st in self._states:
            st.force()
        if self.tree is not None:
            self.tree.forget()
        return self.sample()

    # -- readings -------------------------------------------------------------------

    def _read(self, st: _DeviceState, now: float, slow: bool = True) -> dict[str, float]:
        """The device-wide readings due at ``now`` (absent ones left out); ``slow`` says
        the once-a-second ones are due."""
        h = st.dev.handle
        # a MIG instance has no power sensor: the parent GPU's readings stand for it
        hp = st.dev.parent if st.dev.is_mig else h
        out: dict[str, float] = {}
        fv = {}
        fast = _FAST_FIELDS if st.power_buffer is None else ()
        fields = [f for f in st.fields if slow or f in fast]
        if fields:
            got = nvml_query("nvmlDeviceGetFieldValues", h, fields)
            if got is not NA:
                fv = {fid: field_value(v) for fid, v in zip(fields, got, strict=True)}
        if slow or st.power_buffer is None:  # the buffer holds every sample between
            mw = fv.get(FI_POWER_INSTANT)
            if mw is None:
                mw = _num(st.query("nvmlDeviceGetPowerUsage", hp))
            _put(out, "power_w", mw, 1e-3)

        if st.energy.due(now):
            energy = _num(st.query("nvmlDeviceGetTotalEnergyConsumption", hp))
            if energy is not None:
                if st.energy0_mj is None:
                    st.energy0_mj, st.energy0_at = energy, time.time()
                out["energy_j"] = (energy - st.energy0_mj) / 1000.0

        util_due = st.util.due(now)
        if util_due:
            util = st.query("nvmlDeviceGetUtilizationRates", h)
            if util is not NA:
                out["gpu_util_pct"], out["mem_util_pct"] = float(util.gpu), float(util.memory)
        if util_due or slow:
            mem = st.query("nvmlDeviceGetMemoryInfo", h)
            if mem is not NA:
                out["mem_used_mib"] = mem.used / _MIB
                if slow:
                    out["mem_total_mib"] = mem.total / _MIB
        _put(out, "sm_clock_mhz", _num(st.query("nvmlDeviceGetClockInfo", h, 1)))

        reasons = st.query("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is NA:  # drivers before R535 only have the older name
            reasons = st.query("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        if reasons is not NA:
            mask = int(reasons)
            out["clock_reasons_mask"] = float(mask)
            out["throttle_sw_power_cap_flag"] = float(bool(mask & REASON_SW_POWER_CAP))
            out["throttle_hw_slowdown_flag"] = float(bool(mask & REASON_HW_SLOWDOWN))
            out["throttle_thermal_flag"] = float(bool(mask & (REASON_SW_THERMAL | REASON_HW_THERMAL)))

        if slow:
            _put(out, "temp_c", _num(st.query("nvmlDeviceGetTemperature", h, 0)))
            _put(out, "mem_clock_mhz", _num(st.query("nvmlDeviceGetClockInfo", h, 2)))
            _put(out, "power_avg_w", fv.get(FI_POWER_AVERAGE), 1e-3)
            _put(out, "mem_temp_c", fv.get(FI_MEMORY_TEMP))
            pstate = _num(st.query("nvmlDeviceGetPerformanceState", h))
            if pstate is not None and pstate != _PSTATE_UNKNOWN:
                out["pstate_level"] = pstate
            _put(out, "fan_pct", _num(st.query("nvmlDeviceGetFanSpeed", h)))
            for name, kind in (("ecc_corrected_volatile_count", 0), ("ecc_uncorrected_volatile_count", 1)):
                _put(out, name, _num(st.query("nvmlDeviceGetTotalEccErrors", h, kind, 0)))
            out.update(self._pcie(st, fv, now))
        return out

    def _pcie(self, st: _DeviceState, fv: dict[int, float | None], now: float) -> dict[str, float]:
        tx, rx = fv.get(FI_PCIE_TX_BYTES), fv.get(FI_PCIE_RX_BYTES)
        if tx is not None and rx is not None:
            # byte counters: a rate over the time since the previous read (about 1 s)
            prev = st.pcie_prev
            if prev is not None and not rate_window(prev[0], now, st.interval):
                return {}  # too short a window (the first reading right after the probe)
            st.pcie_prev = (now, tx, rx)
            if prev is None:
                return {}
            dt = now - prev[0]
            return {"pcie_tx_bytes_per_s": max(tx - prev[1], 0.0) / dt,
                    "pcie_rx_bytes_per_s": max(rx - prev[2], 0.0) / dt}
        # fallback: the driver's own 20 ms sample per direction, in KB/s (1 KB = 1024 B);
        # it blocks for those 20 ms, so only every PCIE_THROUGHPUT_EVERY_S
        out: dict[str, float] = {}
        if not st.pcie.due(now):
            return out
        for name, counter in (("pcie_tx_bytes_per_s", 0), ("pcie_rx_bytes_per_s", 1)):
            _put(out, name, _num(nvml_query("nvmlDeviceGetPcieThroughput", st.dev.handle, counter)), 1024.0)
        return out


def _timed(key: str, buffer: DriverSamples) -> list[TimedSample]:
    """The buffer's new samples as lines of their own; the last carries the restart position."""
    got = buffer.read()
    return [TimedSample(t_us / 1e6, {key: w}, {key: t_us} if i == len(got) - 1 else None)
            for i, (t_us, w) in enumerate(got)]


def _num(value: Any) -> float | None:
    return None if value is NA or value is None else float(value)


def _put(out: dict[str, float], key: str, value: float | None, scale: float = 1.0) -> None:
    if value is not None:
        out[key] = value * scale
