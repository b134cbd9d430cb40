"""amdsmi: AMD GPUs' power, energy, utilisation, memory, temperatures, clocks and the run's
own share of each GPU, through ROCm's ``amdsmi`` Python bindings (radtrack/listeners/amd_reads.py).

Its series say what they are (roles, scopes, units) with the same quantity names as smi's
where the quantity is the same (``power_w``, ``energy_j``, ``gpu_util_pct``,
``mem_used_mib``, ``temp_c``, ``sm_clock_mhz``, ``proc_sm_util_pct``,
``proc_mem_used_mib``): readers select by role and quantity, so an AMD GPU gets the run's
energy with its interval, co-location attribution, code windows, GPU labels, the report and
the page as an NVIDIA GPU does, and no reader names this listener.

A device is ``gpu<i>``, i its place among the run's GPUs (``--devices`` entries are the
host's indices, or UUIDs, as ``HIP_VISIBLE_DEVICES`` takes them; none: every GPU); which
physical GPU it is goes in its tags (radtrack/vocab/device_identity.py): ``uuid`` (the
ASIC serial where the library gives no UUID), ``name`` (the market name: the sensor
constants' key), ``index`` (amdsmi's order).

What it lacks against smi: no driver power-sample buffer (its energy intervals come from
the counter alone), no MIG or MPS, no PCIe or ECC counters, no following of a GPU outside
the run's, and no measured sensor period: it declares none, so readers take the cautious
1-s default (vocab/series.py DEFAULT_REFRESH_S) until the sensor is measured on an AMD GPU.
"""

from __future__ import annotations

import time
from typing import Any

from radtrack.listeners.amd_reads import (
    NA,
    AmdGpu,
    availability,
    host_gpus,
    library,
    pick,
    shut_down,
)
from radtrack.listeners.base import (
    Availability,
    DeviceInfo,
    Every,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
)
from radtrack.listeners.proctree import ProcessTree

# quantity -> (unit, role, scope, label, unit as a reader needs it, description, source)
QUANTITIES: dict[str, tuple[str, str, str, str, str, str, str]] = {
    "power_w": ("W", "device_power", "device", "GPU power", "W",
                "socket power: the current reading (MI300 and later), else the firmware's average",
                "amdsmi_get_power_info.current_socket_power, else .average_socket_power"),
    "energy_j": ("J", "energy_counter", "device", "GPU energy counter", "J",
                 "energy used since the listener started (hardware accumulator x its resolution)",
                 "amdsmi_get_energy_count"),
    "gpu_util_pct": ("%", "utilisation", "device", "GPU utilisation", "% of time the GFX engine was busy",
                     "GFX engine activity", "amdsmi_get_gpu_activity.gfx_activity"),
    "mem_util_pct": ("%", "utilisation", "device", "GPU memory utilisation", "% of time memory was busy",
                     "memory controller (UMC) activity", "amdsmi_get_gpu_activity.umc_activity"),
    "mem_used_mib": ("MiB", "memory", "device", "GPU memory used, all processes", "MiB",
                     "VRAM in use, all processes", "amdsmi_get_gpu_memory_usage(VRAM)"),
    "mem_total_mib": ("MiB", "memory", "device", "GPU memory size", "MiB", "VRAM size",
                      "amdsmi_get_gpu_memory_total(VRAM)"),
    "temp_c": ("°C", "temperature", "device", "GPU temperature (hotspot)", "°C",
               "the die's hottest point (junction)", "amdsmi_get_temp_metric(HOTSPOT, CURRENT)"),
    "edge_temp_c": ("°C", "temperature", "device", "GPU edge temperature", "°C", "the die's edge sensor",
                    "amdsmi_get_temp_metric(EDGE, CURRENT)"),
    "mem_temp_c": ("°C", "temperature", "device", "GPU memory temperature", "°C", "HBM/VRAM temperature",
                   "amdsmi_get_temp_metric(VRAM, CURRENT)"),
    "sm_clock_mhz": ("MHz", "clock", "device", "GPU graphics (GFX) clock", "MHz",
                     "the compute units' clock (smi's SM clock)", "amdsmi_get_clock_info(GFX).clk"),
    "mem_clock_mhz": ("MHz", "clock", "device", "GPU memory clock", "MHz", "memory clock",
                      "amdsmi_get_clock_info(MEM).clk"),
    "proc_mem_used_mib": ("MiB", "memory", "device_share", "run's GPU memory", "MiB",
                          "VRAM of the run's process tree", "amdsmi_get_gpu_process_list .memory_usage.vram_mem"),
    "proc_sm_util_pct": ("%", "proc_share", "device_share", "run's GPU compute share",
                         "% of the GPU's GFX engine time",
                         "the run's process tree's GFX engine time over the time between readings",
                         "amdsmi_get_gpu_process_list .engine_usage.gfx"),
    "all_procs_sm_util_pct": ("%", "proc_share", "device", "every process's GPU compute share",
                              "% of the GPU's GFX engine time",
                              "every listed process's GFX engine time over the time between readings",
                              "amdsmi_get_gpu_process_list .engine_usage.gfx"),
}
#: smi's readings of an NVIDIA GPU have priority 10; an AMD GPU is read by this listener alone
PRIORITY = 10
SERIES = tuple(Series(f"amdsmi/gpu<i>/{q}", unit, role, scope, label, text, desc, source, priority=PRIORITY)
               for q, (unit, role, scope, label, text, desc, source) in QUANTITIES.items())
_SERIES = {s.pattern.rsplit("/", 1)[1]: s for s in SERIES}
PROCESS_QUANTITIES = ("proc_mem_used_mib", "proc_sm_util_pct", "all_procs_sm_util_pct")
#: paces: power, energy and activity every interval; memory, temperatures, clocks and the
#: process list (whose shares need a second's worth of engine time to mean much) every second
SLOW_EVERY_S = 1.0


class AmdSmiListener(Listener):
    name = "amdsmi"
    series = SERIES
    #: its counter cannot reach back before its first reading (smi's can, from the driver's
    #: power samples): the launcher holds the scripts until then, so no energy goes unread
    holds_start = True

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.tree = ProcessTree(config.pid) if config.pid is not None else None
        self.lib: Any = None
        self.gpus: list[AmdGpu] = []
        self.keys: dict[str, dict[str, str]] = {}  # scope -> quantity -> key, what it emits
        self.unsupported: list[str] = []
        self.slow = Every(SLOW_EVERY_S, config.interval)

    @classmethod
    def available(cls) -> Availability:
        return availability()

    @classmethod
    def inventory(cls) -> list[DeviceInfo]:
        """This host's AMD GPUs: a row's Devices on one is given to its scripts through
        ROCR_VISIBLE_DEVICES (amd_reads.VISIBILITY)."""
        return host_gpus(cls.name)

    def probe(self) -> list[MetricSpec]:
        self.lib = library()
        self.lib.amdsmi_init()
        handles = list(self.lib.amdsmi_get_processor_handles())
        chosen = pick(self.config.devices, handles, self._uuid_of)
        specs = []
        for place, (index, handle) in enumerate(chosen):
            gpu = AmdGpu(self.lib, handle, index, f"gpu{place}")
            gpu.identify()
            first = self._read(gpu, time.monotonic(), slow=True)
            wanted = [q for q in QUANTITIES if self.tree is not None or q not in PROCESS_QUANTITIES]
            ok = [q for q in wanted if q in first or (q in PROCESS_QUANTITIES and "proc_mem_used_mib" in first)]
            self.unsupported += [f"{gpu.scope}/{q}" for q in wanted if q not in ok]
            self.keys[gpu.scope] = {q: f"amdsmi/{gpu.scope}/{q}" for q in ok}
            specs += [_SERIES[q].spec(self.keys[gpu.scope][q]) for q in ok]
            self.gpus.append(gpu)
        self.slow.force()
        return specs

    def _uuid_of(self, handle: Any) -> str:
        try:
            return str(self.lib.amdsmi_get_gpu_device_uuid(handle))
        except Exception:  # noqa: BLE001 - a GPU without a UUID is chosen by index only
            return ""

    def _read(self, gpu: AmdGpu, now: float, slow: bool) -> dict[str, float]:
        values: dict[str, Any] = {"power_w": gpu.power(), "energy_j": gpu.energy_j(), **gpu.activity()}
        if slow:
            values |= gpu.memory() | gpu.temperatures() | gpu.clocks()
            if self.tree is not None:
                values |= gpu.processes(set(self.tree.pids()), now)
        return {q: v for q, v in values.items() if v is not NA}

    def sample(self) -> dict[str, float]:
        now = time.monotonic()
        slow = self.slow.due(now)
        out: dict[str, float] = {}
        for gpu in self.gpus:
            keys = self.keys[gpu.scope]
            out |= {keys[q]: v for q, v in self._read(gpu, now, slow).items() if q in keys}
        return out

    def final_sample(self) -> dict[str, float]:
        self.slow.force()
        if self.tree is not None:
            self.tree.forget()
        return self.sample()

    def tags(self) -> dict[str, str]:
        out = {f"radtrack.listener.{self.name}.unsupported": ",".join(self.unsupported)}
        for gpu in self.gpus:
            prefix = f"radtrack.listener.{self.name}.{gpu.scope}"
            facts = {"uuid": gpu.uuid, "name": gpu.name, "index": str(gpu.index), "serial": gpu.serial,
                     "power_source": gpu.power_source}
            out |= {f"{prefix}.{fact}": value for fact, value in facts.items() if value}
        return out

    def close(self) -> None:
        if self.lib is not None:
            shut_down(self.lib)
            self.lib = None
