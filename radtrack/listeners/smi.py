"""smi: per-GPU power, energy, utilisation, memory, clocks, temperatures and the run's
own GPU memory and SM share, straight from NVML (no nvidia-smi parsing).

Every reading is tried once in :meth:`SmiListener.probe`; what a device does not offer
is listed in the ``radtrack.listener.smi.unsupported`` tag and never emitted.

Readings are taken at the pace their source changes or their user needs, so the CPU a
run pays grows little with the GPUs it watches: radtrack/listeners/smi_reads.py holds the paces
and why (docs/metrics.md "Reading paces" says the same for users). In short: power,
SM clock and clock-event reasons every interval; utilisation and memory every 0.2 s;
temperatures, clocks, P-state and the driver's power sample buffer every second; PCIe
byte counters every 5 s, ECC counts every 10 s, the energy counter every 30 s where the
driver's power samples fill between (else every 5 s), and at the first and the final
reading; the per-process SM shares every second only on a GPU that is shared (the
launcher says so through ``RADTRACK_SHARED_GPUS``, or another process holds a context
there), the run's own GPU memory every 5 s elsewhere. Every field due in a tick is
read in one ``nvmlDeviceGetFieldValues`` call per GPU.

A reading the device answers "not supported" at the probe (an H100 has no fan) is never
asked again (:meth:`GpuReader.query`): the answer costs as much as a reading, 0.4-0.6 ms
for the fan under load. (Reading the power sample ring and the per-process readings in one
driver call instead of pynvml's two was tried and not kept: the size query is cheap, the
filling call is what costs; docs/performance.md.)

Where the GPU offers it (H100: about 50 samples a second), the driver's own power sample
buffer is read once a second (radtrack/listeners/driver_samples.py) and every sample is emitted
once, with the driver's timestamp, as ``power_sample_w`` on sample lines of its own
(:class:`~radtrack.listeners.base.TimedSample`); across a listener restart reading picks
up after the last sample emitted (``ListenerConfig.resume``).

A GPU outside the run's own that a process of its tree turns out to use is followed from
the look that finds it, every 5 s (radtrack/listeners/gpu_follow.py): read as the run's own GPUs
are, under the next free scope, with a new hello (:meth:`SmiListener.grown`).

A MIG instance has no power sensor of its own: its power and energy readings are the
parent GPU's (tag ``radtrack.listener.smi.<scope>.parent_uuid``), which co-location
accounting shares out among the instances.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from radtrack.device_entries import SHARED_GPUS_ENV, shared_hint
from radtrack.listeners.base import (
    HOST_SAMPLER,
    Availability,
    DeviceInfo,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
    TimedSample,
)
from radtrack.listeners.devices import gpu_at, host_wide, run_devices
from radtrack.listeners.driver_samples import READ_EVERY_S, DriverSamples
from radtrack.listeners.energy_backfill import backfill
from radtrack.listeners.gpu_follow import GpuFollower, follow_enabled, positions, restored
from radtrack.listeners.gpuprocs import MPS_CLIENT_REASON
from radtrack.listeners.nvml import NA, host_gpus, nvml_available, nvml_query, text
from radtrack.listeners.proctree import ProcessTree
from radtrack.listeners.smi_reads import (  # noqa: F401 - the paces, importable from here as before
    ENERGY_EVERY_S,
    ENERGY_SAMPLED_EVERY_S,
    FI_MEMORY_TEMP,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    FI_POWER_AVERAGE,
    FI_POWER_INSTANT,
    PCIE_EVERY_S,
    PCIE_THROUGHPUT_EVERY_S,
    SLOW_EVERY_S,
    SOLO_PROCS_EVERY_S,
    UTIL_EVERY_S,
    GpuReader,
    field_value,
)

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
# (radtrack/listeners/base.py ROLES, SCOPES); docs/metrics.md is checked against it
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
# how each power reading was taken (radtrack/listeners/base.py FLAVOURS): energy integrates the 1-s
# average before the instantaneous reading; the driver's samples shape error bars
FLAVOURS = {"power_avg_w": "average", "power_sample_w": "samples"}
#: smi's readings of a GPU come before another listener's of the same GPU (dcgm's, say)
PRIORITY = 10
#: how often the sensor publishes a new value (s): the H100's and H200's power reading and
#: energy counter every 100 ms (../shared/fixtures/nvidia/h100 nvml-probe; benchmarks/power_sensor.py
#: on the H200); code windows and energy intervals read it (vocab/series.py Series.refresh_s)
REFRESH_S = {"power_w": 0.1, "energy_j": 0.1}
SERIES = tuple(Series(f"smi/gpu<i>/{q}", unit, *MEANINGS[q], description=desc, source=source,
                      flavour=FLAVOURS.get(q, ""), priority=PRIORITY, refresh_s=REFRESH_S.get(q))
               for q, (unit, desc, source) in QUANTITIES.items())
_SERIES = {s.pattern.rsplit("/", 1)[1]: s for s in SERIES}
PROCESS_QUANTITIES = ("proc_mem_used_mib", "proc_sm_util_pct", "all_procs_sm_util_pct",
                      "mps_sm_util_pct")
_UTIL_QUANTITIES = PROCESS_QUANTITIES[1:]


class SmiListener(Listener):
    name = "smi"
    series = SERIES

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.tree = ProcessTree(config.pid) if config.pid is not None else None
        self._states: list[GpuReader] = []
        self._supported: dict[str, set[str]] = {}  # scope -> quantities
        self._unsupported: list[str] = []
        self._mps_servers: dict[int, bool] = {}
        self._timed: list[TimedSample] = []  # driver power samples not yet handed out
        self._specs: list[MetricSpec] = []  # every metric declared so far
        self._grown = False  # a GPU was followed since the last hello
        self.follower: GpuFollower | None = None  # GPUs outside the run's, looked at
        self._follow_failed: list[str] = []  # why a GPU could not be followed
        # an MPS client (the launcher gives MPS rows the daemon's pipe directory) has no SM
        # figure of its own: NVML accounts its work to the server
        self.mps_client = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))
        # the GPUs another row of the workload may use too (the launcher's word): their
        # per-process SM shares are read every second from the start
        self.shared_gpus = shared_hint(os.environ.get(SHARED_GPUS_ENV))
        self.clock = time.monotonic  # replaceable in tests

    @classmethod
    def available(cls) -> Availability:
        return nvml_available()

    @classmethod
    def inventory(cls) -> list[DeviceInfo]:
        """This host's NVIDIA GPUs through NVML. The launcher takes the same GPUs from
        nvidia-smi instead (radtrack/gpus.py: prefetched, and with MIG mode, clocks and
        power limits), so it never starts NVML itself."""
        return host_gpus(cls.name)

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        return HOST_SAMPLER  # one NVML session serves dcgm's GPM backend as well

    def _shared(self, entry: str) -> bool:
        return self.mps_client or self.shared_gpus is None or entry in self.shared_gpus

    def probe(self) -> list[MetricSpec]:
        watched = run_devices(self.config.devices)
        self._states = [GpuReader(d, self.config.interval, shared=self._shared(d.entry),
                                  buffer_every=READ_EVERY_S) for d in watched]
        since = None if self.config.resume else self.config.since  # a restart does not reach back
        for st in self._states:
            self._open(st, since)
        if self.tree is not None and not host_wide() and follow_enabled():
            try:
                self.follower = GpuFollower(watched, self.config.interval)
            except Exception as exc:  # noqa: BLE001 - the run's own GPUs are read all the same
                self._follow_failed.append(f"listing the GPUs: {type(exc).__name__}: {exc}")
                return list(self._specs)
            for scope, index, at in restored(self.name, self.config.resume):
                self._follow(index, at, scope)  # as the listener's earlier process did
            # a tree already on another GPU (a late start, a restart) is followed from now
            for index in self.follower.look(self.clock(), self._tree_pids, force=True):
                self._follow(index)
        self._grown = False
        return list(self._specs)

    def _open(self, st: GpuReader, since: float | None, from_us: int | None = None) -> dict[str, float]:
        """Probe one GPU's readings (returned: its first); its specs join :attr:`_specs`. ``since``: the run's
        start, which its energy reaches back to; ``from_us``: where the driver's power
        samples start without a restart position (a followed GPU: when it was followed)."""
        key = f"smi/{st.dev.scope}/power_sample_w"
        st.probe_fields()
        buf = DriverSamples(st.dev.parent if st.dev.is_mig else st.dev.handle)
        start_us = from_us if since is None else int(since * 1e6)
        if buf.open(self.config.resume.get(key), start_us):
            st.open_buffer(buf)
        first = st.read(self.clock())
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
        self._specs += [_SERIES[q].spec(f"smi/{st.dev.scope}/{q}") for q in wanted if q in ok]
        st.force()  # the first sample reads everything again
        return first

    def _tree_pids(self) -> set[int]:
        return set(self.tree.pids()) if self.tree is not None else set()

    def _follow(self, index: int, at: float | None = None, scope: str | None = None) -> None:
        """Watch NVML GPU ``index`` from now on (radtrack/listeners/gpu_follow.py): under ``scope``
        since ``at`` where an earlier process followed it, else under the next free scope
        since now, its first reading stamped then with the positions a restart keeps it by."""
        assert self.follower is not None
        if self.follower.take(index) is None:
            return  # watched already, or no GPU NVML sees (a stale restart position)
        taken = [int(st.dev.scope[3:]) for st in self._states]
        if scope is None or scope in {st.dev.scope for st in self._states}:
            scope = f"gpu{max(taken, default=-1) + 1}"
        new = at is None
        at = round(time.time(), 3) if at is None else at  # the tag's ms, the position's us
        self._grown = True
        try:
            st = GpuReader(gpu_at(index, scope), self.config.interval,
                           shared=self.mps_client or self.shared_gpus is None, buffer_every=READ_EVERY_S)
            st.followed = at
            st.procs.checked_us = st.procs.util_ts = int((at - SLOW_EVERY_S) * 1e6)
            first = self._open(st, None, int(at * 1e6))
        except Exception as exc:  # noqa: BLE001 - a GPU outside the run's must not stop its readings
            self._follow_failed.append(f"NVML GPU {index}: {type(exc).__name__}: {exc}")
            return
        self._states.append(st)
        if new:  # the first reading, at the look that found it, carries the positions
            values = {st.keys[q]: v for q, v in first.items() if q in st.keys}
            self._timed.append(TimedSample(at, values, positions(self.name, scope, index, at)))

    def grown(self) -> list[MetricSpec] | None:
        """Every metric, once a GPU was followed since the last hello (base.Listener)."""
        if not self._grown:
            return None
        self._grown = False
        return list(self._specs)

    def tags(self) -> dict[str, str]:
        out = {"radtrack.listener.smi.unsupported": ",".join(self._unsupported)}
        if self._follow_failed:  # radtrack/listeners/gpu_follow.py
            out["radtrack.listener.smi.follow_failed"] = "; ".join(self._follow_failed)[:2000]
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
            if self.tree is not None:
                # shared: SM shares every second from the start; solo: the GPU's contexts
                # every SOLO_PROCS_EVERY_S, shares once another process holds one
                out[f"{prefix}.sharing"] = "shared" if st.shared else "solo"
            if self.mps_client and self.tree is not None:
                out[f"{prefix}.proc_sm_util_pct"] = f"absent: {MPS_CLIENT_REASON}"
            if "energy_j" in st.keys:  # which of NVML's two doors to the counter is read
                out[f"{prefix}.energy_source"] = ("NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION" if st.energy_field
                                                  else "nvmlDeviceGetTotalEnergyConsumption")
            if st.backfill is not None:
                out.update(st.backfill.tags(prefix))
            if st.followed is not None:  # a GPU the run turned out to use: from then on
                out[f"{prefix}.followed"] = f"{st.followed:.3f}"
                out[f"{prefix}.energy_from"] = "followed"
        return out

    def sample(self) -> dict[str, float]:
        now = self.clock()
        out: dict[str, float] = {}
        tree_pids: set[int] | None = None
        for st in self._states:
            values = st.read(now)
            if self.tree is not None and st.procs_due(now):
                if tree_pids is None:
                    tree_pids = set(self.tree.pids())
                values.update(st.procs.read(tree_pids, self._mps_servers))
            keys = st.keys
            out.update({keys[q]: v for q, v in values.items() if q in keys})
            if st.power_buffer is not None and st.buffer.due(now):
                self._timed += _timed(f"smi/{st.dev.scope}/power_sample_w", st.power_buffer)
        if self.follower is not None:
            for index in self.follower.look(now, self._tree_pids):
                self._follow(index)
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


def _timed(key: str, buffer: DriverSamples) -> list[TimedSample]:
    """The buffer's new samples as lines of their own; the last carries the restart position."""
    got = buffer.read()
    return [TimedSample(t_us / 1e6, {key: w}, {key: t_us} if i == len(got) - 1 else None)
            for i, (t_us, w) in enumerate(got)]

