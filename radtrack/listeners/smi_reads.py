"""One GPU's NVML readings for the smi listener (radtrack/listeners/smi.py), each at its own pace.

What a reading costs grows with the GPUs a run watches, so each is read at the pace its
source changes or its user needs, never faster (CPU per call measured on an H100 under
load, benchmarks/listener_costs.py and sampler_profile.py; docs/metrics.md "Reading paces"
says the same for users):

- every interval: instantaneous power (where the driver's power sample buffer is not
  read), SM clock and clock-event reasons (25-60 us each);
- every :data:`UTIL_EVERY_S`: GPU and memory utilisation, device memory in use;
- every :data:`SLOW_EVERY_S`: temperatures, memory clock, P-state, fan, 1-s average
  power, instantaneous power where the buffer is read, the buffer itself;
- every :data:`PCIE_EVERY_S`: the PCIe byte counters (370 us each), as a rate over those
  seconds: a transfer rate, not an event to catch;
- every :data:`ECC_EVERY_S`: the volatile ECC counts (a counter: nothing is missed);
- every :data:`ENERGY_SAMPLED_EVERY_S` where the driver's 50-Hz power samples are read
  (they place the energy in time between counter readings:
  radtrack/compute/device_energy.py ``cumulative_energy``), else every
  :data:`ENERGY_EVERY_S`: the energy counter (4-10 ms of CPU a read, the dearest reading);
  always at the first and the final reading, which bound the run's total exactly;
- the per-process readings (radtrack/listeners/gpuprocs.py): where the GPU is shared
  (the launcher says a co-located row may use it, ``SHARED_GPUS_ENV``; an MPS client; or
  a process outside the run's tree holds a context on it) every :data:`SLOW_EVERY_S`,
  the accounting's 1-s windows; on a GPU the run has to itself only the list of contexts
  (the run's own memory, and whether someone else arrived), every
  :data:`SOLO_PROCS_EVERY_S`: the SM share readings (1.9 ms a read) only split a GPU's
  energy among those sharing it, and a GPU nobody shares goes wholly to its run.

All field readings of a tick go in one ``nvmlDeviceGetFieldValues`` call per GPU: power,
average power, memory temperature, and when due the PCIe counters, the ECC counts and
the energy counter (``NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, used only where it agrees
with ``nvmlDeviceGetTotalEnergyConsumption`` at the probe).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from radtrack.listeners.base import Every, rate_window
from radtrack.listeners.devices import GpuDevice
from radtrack.listeners.driver_samples import READ_EVERY_S, DriverSamples
from radtrack.listeners.energy_backfill import Backfill
from radtrack.listeners.gpuprocs import ProcessShare
from radtrack.listeners.nvml import NA, nvml_query

FI_ECC_CORRECTED_VOLATILE = 3  # NVML_FI_DEV_ECC_SBE_VOL_TOTAL
FI_ECC_UNCORRECTED_VOLATILE = 4  # NVML_FI_DEV_ECC_DBE_VOL_TOTAL
FI_MEMORY_TEMP = 82
FI_TOTAL_ENERGY = 83  # NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since the driver loaded
FI_POWER_AVERAGE = 185
FI_POWER_INSTANT = 186
FI_PCIE_TX_BYTES = 197
FI_PCIE_RX_BYTES = 198
# field id -> the pace it is read at (the gate of GpuReader that says it is due)
_FIELD_PACE = {FI_POWER_INSTANT: "power", FI_POWER_AVERAGE: "slow", FI_MEMORY_TEMP: "slow",
               FI_PCIE_TX_BYTES: "pcie", FI_PCIE_RX_BYTES: "pcie",
               FI_ECC_CORRECTED_VOLATILE: "ecc", FI_ECC_UNCORRECTED_VOLATILE: "ecc",
               FI_TOTAL_ENERGY: "energy"}
FIELDS = tuple(_FIELD_PACE)

UTIL_EVERY_S = 0.2  # the driver refreshes utilisation 5 times a second
SLOW_EVERY_S = 1.0  # also the per-process readings of a shared GPU: attribution.WINDOW_S
PCIE_EVERY_S = 5.0
ECC_EVERY_S = 10.0
ENERGY_EVERY_S = 5.0  # where power is only polled
ENERGY_SAMPLED_EVERY_S = 30.0  # where the driver's 50-Hz power samples fill between
SOLO_PROCS_EVERY_S = 5.0  # the contexts on a GPU the run has to itself
PCIE_THROUGHPUT_EVERY_S = 10.0  # the blocking fallback, where the byte counters are absent

# clock-event ("throttle") reason bits, nvmlClocksEventReason*
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
_PSTATE_UNKNOWN = 32
_MIB = 2**20
# the energy field stands for nvmlDeviceGetTotalEnergyConsumption only where both agree
# at the probe this closely (ms apart, a GPU draws at most a few J between them)
_ENERGY_AGREE_REL, _ENERGY_AGREE_MJ = 0.01, 20_000.0


def field_value(fv: Any) -> float | None:
    """The number in one c_nvmlFieldValue_t, None when NVML returned an error for it."""
    if fv.nvmlReturn != 0:
        return None
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[fv.valueType]
    return float(getattr(fv.value, member))


@dataclass
class GpuReader:
    """One GPU's readings, their paces and what is remembered between them."""

    dev: GpuDevice
    interval: float
    shared: bool = False  # per-process SM shares from the start, not only once someone arrives
    buffer_every: float = READ_EVERY_S  # the driver's power sample buffer
    fields: list[int] = field(default_factory=list)  # field ids this device answers
    energy_field: bool = False  # the energy counter is read as a field
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
    pcie: Every = field(init=False)  # the throughput fallback
    pcie_counters: Every = field(init=False)
    ecc: Every = field(init=False)
    contexts: Every = field(init=False)  # the contexts of a GPU the run has to itself
    # NVML calls (function and arguments) that answered "not available" while probing: a
    # device without a fan, ECC or an older name never answers them later, and asking costs
    # (nvmlDeviceGetFanSpeed: 380-570 us a call on an H100 that has no fan)
    absent: set[tuple[Any, ...]] = field(default_factory=set)
    probed: bool = False
    slow_now: bool = False  # the last reading took the once-a-second ones
    followed: float | None = None  # unix s a GPU outside the run's was followed from (gpu_follow.py)

    def __post_init__(self) -> None:
        self.procs = ProcessShare(self.dev.handle, solo=not self.shared)
        self.util = Every(UTIL_EVERY_S, self.interval)
        self.slow = Every(SLOW_EVERY_S, self.interval)
        self.energy = Every(ENERGY_EVERY_S, self.interval)
        self.buffer = Every(self.buffer_every, self.interval)
        self.pcie = Every(PCIE_THROUGHPUT_EVERY_S, self.interval)
        self.pcie_counters = Every(PCIE_EVERY_S, self.interval)
        self.ecc = Every(ECC_EVERY_S, self.interval)
        self.contexts = Every(SOLO_PROCS_EVERY_S, self.interval)

    def force(self) -> None:
        """Everything due at the next reading (the first after the probe, the final one)."""
        for gate in (self.util, self.slow, self.energy, self.buffer, self.pcie,
                     self.pcie_counters, self.ecc, self.contexts):
            gate.force()

    def query(self, func: str, *args: Any) -> Any:
        """``nvml_query(func, *args)``, NA without asking for a call found absent at the probe."""
        call = (func, *args[1:])  # the handle is the device's own
        if call in self.absent:
            return NA
        value = nvml_query(func, *args)
        if value is NA and not self.probed:
            self.absent.add(call)
        return value

    # -- the probe ------------------------------------------------------------------
    def probe_fields(self) -> None:
        """Which fields the device answers; the energy counter as a field only where it
        agrees with nvmlDeviceGetTotalEnergyConsumption (a MIG instance's energy is its
        parent GPU's, read by the function)."""
        ids = [f for f in FIELDS if not (self.dev.is_mig and f == FI_TOTAL_ENERGY)]
        got = nvml_query("nvmlDeviceGetFieldValues", self.dev.handle, ids)
        if got is NA:
            return
        values = {fid: field_value(fv) for fid, fv in zip(ids, got, strict=True)}
        self.fields = [fid for fid in ids if values[fid] is not None]
        if FI_TOTAL_ENERGY in self.fields:
            self.fields.remove(FI_TOTAL_ENERGY)
            mj = _num(self.query("nvmlDeviceGetTotalEnergyConsumption", self.dev.handle))
            fmj = values[FI_TOTAL_ENERGY]
            if mj is not None and fmj is not None and \
                    abs(fmj - mj) <= max(_ENERGY_AGREE_REL * abs(mj), _ENERGY_AGREE_MJ):
                self.fields.append(FI_TOTAL_ENERGY)
                self.energy_field = True

    def open_buffer(self, buffer: DriverSamples) -> None:
        """The device keeps the driver's power samples: they are read once a second, and
        the energy counter only every ENERGY_SAMPLED_EVERY_S."""
        self.power_buffer = buffer
        self.energy.period = ENERGY_SAMPLED_EVERY_S

    # -- readings -------------------------------------------------------------------
    def read(self, now: float) -> dict[str, float]:
        """The device-wide readings due at ``now`` (absent ones left out)."""
        h = self.dev.handle
        # a MIG instance has no power sensor: the parent GPU's readings stand for it
        hp = self.dev.parent if self.dev.is_mig else h
        out: dict[str, float] = {}
        slow = self.slow_now = self.slow.due(now)
        counters = any(f in (FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES) for f in self.fields)
        due = {"slow": slow, "power": slow or self.power_buffer is None,
               "pcie": counters and self.pcie_counters.due(now), "ecc": self.ecc.due(now),
               "energy": self.energy.due(now)}
        fv: dict[int, float | None] = {}
        fields = [f for f in self.fields if due[_FIELD_PACE[f]]]
        if fields:  # one call for every field due now
            got = nvml_query("nvmlDeviceGetFieldValues", h, fields)
            if got is not NA:
                fv = {fid: field_value(v) for fid, v in zip(fields, got, strict=True)}
        if due["power"]:  # the buffer holds every sample between
            mw = fv.get(FI_POWER_INSTANT)
            if mw is None:
                mw = _num(self.query("nvmlDeviceGetPowerUsage", hp))
            _put(out, "power_w", mw, 1e-3)
        if due["energy"]:
            self._energy(out, fv.get(FI_TOTAL_ENERGY), hp)

        util_due = self.util.due(now)
        if util_due:
            util = self.query("nvmlDeviceGetUtilizationRates", h)
            if util is not NA:
                out["gpu_util_pct"], out["mem_util_pct"] = float(util.gpu), float(util.memory)
        if util_due or slow:
            mem = self.query("nvmlDeviceGetMemoryInfo", h)
            if mem is not NA:
                out["mem_used_mib"] = mem.used / _MIB
                if slow:
                    out["mem_total_mib"] = mem.total / _MIB
        _put(out, "sm_clock_mhz", _num(self.query("nvmlDeviceGetClockInfo", h, 1)))
        self._reasons(out, h)

        if slow:
            _put(out, "temp_c", _num(self.query("nvmlDeviceGetTemperature", h, 0)))
            _put(out, "mem_clock_mhz", _num(self.query("nvmlDeviceGetClockInfo", h, 2)))
            _put(out, "power_avg_w", fv.get(FI_POWER_AVERAGE), 1e-3)
            _put(out, "mem_temp_c", fv.get(FI_MEMORY_TEMP))
            pstate = _num(self.query("nvmlDeviceGetPerformanceState", h))
            if pstate is not None and pstate != _PSTATE_UNKNOWN:
                out["pstate_level"] = pstate
            _put(out, "fan_pct", _num(self.query("nvmlDeviceGetFanSpeed", h)))
        if due["ecc"]:
            for name, kind, fid in (("ecc_corrected_volatile_count", 0, FI_ECC_CORRECTED_VOLATILE),
                                    ("ecc_uncorrected_volatile_count", 1, FI_ECC_UNCORRECTED_VOLATILE)):
                count = fv.get(fid) if fid in self.fields else None
                if count is None:
                    count = _num(self.query("nvmlDeviceGetTotalEccErrors", h, kind, 0))
                _put(out, name, count)
        if counters:
            if due["pcie"]:
                out.update(self._pcie_rate(fv, now))
        elif slow:
            out.update(self._pcie_throughput(now))
        return out

    def procs_due(self, now: float) -> bool:
        """Whether the per-process readings are due: with the once-a-second readings where
        the GPU is shared, the contexts' check every SOLO_PROCS_EVERY_S where it is not.
        Call once per reading, after :meth:`read`."""
        if self.procs.solo:
            return self.contexts.due(now)
        return self.slow_now

    def _energy(self, out: dict[str, float], field_mj: float | None, hp: Any) -> None:
        mj = field_mj if self.energy_field else None
        if mj is None:
            mj = _num(self.query("nvmlDeviceGetTotalEnergyConsumption", hp))
        if mj is not None:
            if self.energy0_mj is None:
                self.energy0_mj, self.energy0_at = mj, time.time()
            out["energy_j"] = (mj - self.energy0_mj) / 1000.0

    def _reasons(self, out: dict[str, float], h: Any) -> None:
        reasons = self.query("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is NA:  # drivers before R535 only have the older name
            reasons = self.query("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        if reasons is not NA:
            mask = int(reasons)
            out["clock_reasons_mask"] = float(mask)
            out["throttle_sw_power_cap_flag"] = float(bool(mask & REASON_SW_POWER_CAP))
            out["throttle_hw_slowdown_flag"] = float(bool(mask & REASON_HW_SLOWDOWN))
            out["throttle_thermal_flag"] = float(bool(mask & (REASON_SW_THERMAL | REASON_HW_THERMAL)))

    def _pcie_rate(self, fv: dict[int, float | None], now: float) -> dict[str, float]:
        """The byte counters as a rate over the time since the previous read (PCIE_EVERY_S)."""
        tx, rx = fv.get(FI_PCIE_TX_BYTES), fv.get(FI_PCIE_RX_BYTES)
        if tx is None or rx is None:
            return {}
        prev = self.pcie_prev
        if prev is not None and not rate_window(prev[0], now, self.interval):
            return {}  # too short a window (the first reading right after the probe)
        self.pcie_prev = (now, tx, rx)
        if prev is None:
            return {}
        dt = now - prev[0]
        return {"pcie_tx_bytes_per_s": max(tx - prev[1], 0.0) / dt,
                "pcie_rx_bytes_per_s": max(rx - prev[2], 0.0) / dt}

    def _pcie_throughput(self, now: float) -> dict[str, float]:
        """Without the byte counters: the driver's own 20 ms sample per direction, in KB/s
        (1 KB = 1024 B); it blocks for those 20 ms, so only every PCIE_THROUGHPUT_EVERY_S."""
        out: dict[str, float] = {}
        if not self.pcie.due(now):
            return out
        for name, counter in (("pcie_tx_bytes_per_s", 0), ("pcie_rx_bytes_per_s", 1)):
            _put(out, name, _num(nvml_query("nvmlDeviceGetPcieThroughput", self.dev.handle, counter)),
                 1024.0)
        return out


def _num(value: Any) -> float | None:
    return None if value is NA or value is None else float(value)


def _put(out: dict[str, float], key: str, value: float | None, scale: float = 1.0) -> None:
    if value is not None:
        out[key] = value * scale
