"""How the amdsmi listener reads one AMD GPU through ROCm's ``amdsmi`` Python bindings.

The library is imported only where it is present (:func:`library`): on a host without ROCm
its import fails and :func:`availability` says why, so nothing else of radtrack needs it.
Every reading goes through one gate (:meth:`AmdGpu.query`) that turns the library's "not
supported" (and any other error) into :data:`NA`, never a 0: a reading the GPU refuses at
the probe is not asked again.

Units as the bindings return them (py-interface/amdsmi_interface.py): power in W, memory in
bytes, temperatures in °C, clocks in MHz, the energy accumulator in counts of
``counter_resolution`` µJ, a process's GFX engine time in ns since it started.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from radtrack.listeners.base import Availability, DeviceInfo

#: what a refused reading reads as (the library's "not supported", an error, an "N/A")
NA: Any = object()
_MIB = 1024 * 1024
#: the library's own marks of a value the device does not report
_ABSENT = ("N/A", None)
#: ROCm's variables that select GPUs for a process (ROCm's "GPU isolation techniques" and HIP
#: environment variables pages). ROCR_VISIBLE_DEVICES, the ROCm runtime's, is the one radtrack
#: sets from a row's Devices: every ROCm application (HIP, and PyTorch on it, OpenCL) goes
#: through that runtime, and it is ROCm's recommendation on Linux. HIP_VISIBLE_DEVICES,
#: CUDA_VISIBLE_DEVICES (HIP honours both) and GPU_DEVICE_ORDINAL select too, on top of it.
VISIBILITY = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
VENDOR = "AMD"


def library() -> ModuleType:
    """ROCm's ``amdsmi`` bindings (ImportError, OSError where ROCm's library is missing)."""
    return importlib.import_module("amdsmi")


def availability() -> Availability:
    """Whether amdsmi can read an AMD GPU here: its bindings import, the library starts
    (the amdgpu driver is loaded) and it lists at least one GPU; else why not."""
    try:
        lib = library()
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError from the shared library
        return Availability(False, f"the amdsmi Python bindings (ROCm's AMD SMI library) do not import "
                                   f"({type(exc).__name__}: {exc}); on an AMD GPU host install ROCm and "
                                   "its amdsmi package")
    try:
        lib.amdsmi_init()
    except Exception as exc:  # noqa: BLE001 - the library's exceptions, whatever their class
        return Availability(False, f"amdsmi_init failed ({_one_line(exc)}): is the amdgpu driver loaded?")
    try:
        count = len(lib.amdsmi_get_processor_handles())
    except Exception as exc:  # noqa: BLE001
        return Availability(False, f"amdsmi lists no GPU ({_one_line(exc)})")
    finally:
        shut_down(lib)
    return Availability(True) if count else Availability(False, "amdsmi lists no AMD GPU on this host")


def host_gpus(listener: str) -> list[DeviceInfo]:
    """Every AMD GPU of this host in amdsmi's order (its processor handles): index, UUID
    (else the ASIC serial), market name, VRAM size; [] where the library is missing or fails."""
    try:
        lib = library()
        lib.amdsmi_init()
    except Exception:  # noqa: BLE001 - no ROCm here: no AMD GPU (availability() says why)
        return []
    try:
        out = []
        for index, handle in enumerate(lib.amdsmi_get_processor_handles()):
            gpu = AmdGpu(lib, handle, index, f"gpu{index}")
            gpu.identify()
            total = gpu.memory()["mem_total_mib"]
            out.append(DeviceInfo(index=index, uuid=gpu.uuid, name=gpu.name, vendor=VENDOR, listener=listener,
                                  visibility=VISIBILITY, memory_mib=None if total is NA else total))
        return out
    except Exception:  # noqa: BLE001 - the library's errors: no inventory rather than no launch
        return []
    finally:
        shut_down(lib)


def _one_line(exc: Exception) -> str:
    """The library's message on one line (its exceptions say ``Error code:\\n\\t8 | ...``)."""
    return " ".join(str(exc).split())


def shut_down(lib: ModuleType) -> None:
    try:
        lib.amdsmi_shut_down()
    except Exception:  # noqa: BLE001, S110 - closing twice, or a library already gone
        pass


def number(value: Any, scale: float = 1.0) -> Any:
    """``value`` x ``scale`` as a float, or :data:`NA` for the library's "N/A" marks."""
    if value is NA or value in _ABSENT or isinstance(value, (str, bool)):
        return NA
    return float(value) * scale


def pick(entries: Iterable[str], handles: list[Any], uuid_of: Callable[[Any], str]) -> list[tuple[int, Any]]:
    """(host index, handle) of each device entry (an index, or a UUID or its prefix, as
    ``HIP_VISIBLE_DEVICES`` takes them); every GPU for no entries."""
    wanted = [e.strip() for e in entries if e.strip()]
    if not wanted:
        return list(enumerate(handles))
    out = []
    for entry in wanted:
        if entry.isdigit():
            if int(entry) < len(handles):
                out.append((int(entry), handles[int(entry)]))
            continue
        found = next(((i, h) for i, h in enumerate(handles)
                      if uuid_of(h).lower().startswith(entry.lower())), None)
        if found is not None:
            out.append(found)
    return out


@dataclass
class AmdGpu:
    """One AMD GPU as the run sees it (``gpu<i>``), with what its readings need between calls."""

    lib: ModuleType
    handle: Any
    index: int  # the host's index of it: amdsmi's order of processor handles
    scope: str  # gpu<i>, i its place among the run's GPUs
    uuid: str = ""
    name: str = ""
    serial: str = ""
    refused: set[str] = field(default_factory=set)  # readings the probe found unsupported
    energy0_j: float | None = None  # the counter at the probe: energy counts from there
    power_source: str = ""  # which of the power info's fields power_w is
    # per-process GFX engine time: pid -> (ns, when read, s) at the previous reading
    gfx_prev: dict[int, tuple[int, float]] = field(default_factory=dict)

    def query(self, reading: str, call: Callable[[], Any]) -> Any:
        """One library call, :data:`NA` where it fails; a reading refused once is never asked again."""
        if reading in self.refused:
            return NA
        try:
            return call()
        except Exception:  # noqa: BLE001 - the library's "not supported" and its other errors alike
            return NA

    def identify(self) -> None:
        """Its UUID (else its ASIC serial, which also tells one GPU from another), market name."""
        asic = self.query("asic_info", lambda: self.lib.amdsmi_get_gpu_asic_info(self.handle))
        asic = asic if isinstance(asic, dict) else {}
        self.name = str(asic.get("market_name") or "")
        self.serial = str(asic.get("asic_serial") or "")
        uuid = self.query("uuid", lambda: self.lib.amdsmi_get_gpu_device_uuid(self.handle))
        self.uuid = str(uuid) if uuid is not NA and uuid else self.serial

    def power(self) -> Any:
        """Socket power (W): the current reading (MI300 and later), else the firmware's average."""
        info = self.query("power_info", lambda: self.lib.amdsmi_get_power_info(self.handle))
        if not isinstance(info, dict):
            return NA
        for source in ("current_socket_power", "average_socket_power"):
            value = number(info.get(source))
            if value is not NA and value > 0:
                self.power_source = self.power_source or source
                return value
        return NA

    def energy_j(self) -> Any:
        """The accumulator in J (counts x resolution µJ), from the probe's reading."""
        got = self.query("energy_count", lambda: self.lib.amdsmi_get_energy_count(self.handle))
        if not isinstance(got, dict):
            return NA
        joules = number(got.get("energy_accumulator"), float(got.get("counter_resolution", 0)) * 1e-6)
        if joules is NA:
            return NA
        if self.energy0_j is None:
            self.energy0_j = joules
        return joules - self.energy0_j

    def activity(self) -> dict[str, Any]:
        got = self.query("activity", lambda: self.lib.amdsmi_get_gpu_activity(self.handle))
        got = got if isinstance(got, dict) else {}
        return {"gpu_util_pct": number(got.get("gfx_activity")), "mem_util_pct": number(got.get("umc_activity"))}

    def memory(self) -> dict[str, Any]:
        vram = self.lib.AmdSmiMemoryType.VRAM
        return {"mem_used_mib": number(self.query("memory_usage", lambda: self.lib.amdsmi_get_gpu_memory_usage(
                    self.handle, vram)), 1 / _MIB),
                "mem_total_mib": number(self.query("memory_total", lambda: self.lib.amdsmi_get_gpu_memory_total(
                    self.handle, vram)), 1 / _MIB)}

    def temperatures(self) -> dict[str, Any]:
        kinds = self.lib.AmdSmiTemperatureType
        current = self.lib.AmdSmiTemperatureMetric.CURRENT
        out = {}
        for quantity, reading, kind in (("temp_c", "hotspot_temp", kinds.HOTSPOT),
                                        ("edge_temp_c", "edge_temp", kinds.EDGE),
                                        ("mem_temp_c", "vram_temp", kinds.VRAM)):
            out[quantity] = number(self.query(reading, lambda k=kind: self.lib.amdsmi_get_temp_metric(
                self.handle, k, current)))
        return out

    def clocks(self) -> dict[str, Any]:
        kinds = self.lib.AmdSmiClkType
        out = {}
        for quantity, reading, kind in (("sm_clock_mhz", "gfx_clock", kinds.GFX),
                                        ("mem_clock_mhz", "mem_clock", kinds.MEM)):
            got = self.query(reading, lambda k=kind: self.lib.amdsmi_get_clock_info(self.handle, k))
            out[quantity] = number(got.get("clk")) if isinstance(got, dict) else NA
        return out

    def processes(self, tree: set[int], now: float) -> dict[str, Any]:
        """The run's tree's VRAM (MiB) and its and every process's share of the GFX engine
        (% of the time since the previous reading, from each process's engine time); a
        process first seen now counts from now (its time so far predates the window)."""
        got = self.query("process_list", lambda: self.lib.amdsmi_get_gpu_process_list(self.handle))
        if not isinstance(got, list):
            return {}
        mem = 0.0
        busy_all = busy_run = 0.0
        span = None
        seen: dict[int, tuple[int, float]] = {}
        for proc in got:
            pid = int(proc.get("pid", 0))
            usage = proc.get("memory_usage") or {}
            vram = number(usage.get("vram_mem", proc.get("mem")))
            if pid in tree and vram is not NA:
                mem += vram / _MIB
            gfx = number((proc.get("engine_usage") or {}).get("gfx"))
            if gfx is NA:
                continue
            seen[pid] = (int(gfx), now)
            if pid in self.gfx_prev:
                ns, then = self.gfx_prev[pid]
                share = max(0.0, gfx - ns) / 1e9
                span = now - then
                busy_all += share
                busy_run += share if pid in tree else 0.0
        self.gfx_prev = seen
        out: dict[str, Any] = {"proc_mem_used_mib": mem}
        if span is not None and span > 0:
            out["proc_sm_util_pct"] = min(100.0, 100.0 * busy_run / span)
            out["all_procs_sm_util_pct"] = min(100.0, 100.0 * busy_all / span)
        elif not got:  # nobody on the GPU: nobody's share
            out["proc_sm_util_pct"] = out["all_procs_sm_util_pct"] = 0.0
        return out
