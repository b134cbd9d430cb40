"""Test-only double of AMD's ``amdsmi`` Python bindings (ROCm's AMD SMI library): the calls
radtrack/listeners/amdsmi.py makes, with the real package's names, argument types and
return shapes (py-interface/amdsmi_interface.py), answered from the scenario file named by
``RADTRACK_FAKE_AMDSMI`` (tests/doubles/amdsmi_scenario.py says what a scenario holds).

Without ``RADTRACK_FAKE_AMDSMI`` the import fails as it does on a host without ROCm's
library, so putting this folder on PYTHONPATH changes nothing else.
"""

from __future__ import annotations

import json
import os
import time
from enum import IntEnum
from pathlib import Path
from typing import Any

if not os.environ.get("RADTRACK_FAKE_AMDSMI"):
    raise ImportError("libamd_smi.so: cannot open shared object file: No such file or directory")

import psutil

_SCENARIO: dict[str, Any] = json.loads(Path(os.environ["RADTRACK_FAKE_AMDSMI"]).read_text())
_T0 = time.time()
_RESOLUTION_UJ = 15.3  # the MI200/MI300 energy counter's resolution, µJ per count
_MIB = 1024 * 1024
_STARTED = False


class AmdSmiException(Exception):
    """Base of the library's exceptions."""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int, err_info: str = ""):
        super().__init__(f"Error code:\n\t{err_code} | {err_info}")
        self.err_code = err_code
        self.err_info = err_info


class AmdSmiRetCode(IntEnum):
    STATUS_SUCCESS = 0
    STATUS_NOT_SUPPORTED = 2
    STATUS_INIT_ERROR = 8
    STATUS_NOT_INIT = 32


class AmdSmiInitFlags(IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4


class amdsmi_processor_handle:  # noqa: N801 - the real type's name
    def __init__(self, index: int):
        self.index = index

    @property
    def spec(self) -> dict[str, Any]:
        return _SCENARIO["gpus"][self.index]


def _check(handle: Any, reading: str) -> dict[str, Any]:
    if not _STARTED:
        raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NOT_INIT, "AMDSMI_STATUS_NOT_INIT")
    if not isinstance(handle, amdsmi_processor_handle):
        raise AmdSmiException(f"{handle!r} is not an amdsmi_processor_handle")
    if reading in handle.spec.get("unsupported", ()):
        raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NOT_SUPPORTED, "AMDSMI_STATUS_NOT_SUPPORTED")
    return handle.spec


def amdsmi_init(flag: int = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
    global _STARTED
    if _SCENARIO.get("init_fails"):
        raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_INIT_ERROR, str(_SCENARIO["init_fails"]))
    _STARTED = True


def amdsmi_shut_down() -> None:
    global _STARTED
    _STARTED = False


def amdsmi_get_processor_handles() -> list[amdsmi_processor_handle]:
    if not _STARTED:
        raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NOT_INIT, "AMDSMI_STATUS_NOT_INIT")
    return [amdsmi_processor_handle(i) for i in range(len(_SCENARIO["gpus"]))]


def amdsmi_get_gpu_device_uuid(handle: amdsmi_processor_handle) -> str:
    return str(_check(handle, "uuid")["uuid"])


def amdsmi_get_gpu_asic_info(handle: amdsmi_processor_handle) -> dict[str, Any]:
    g = _check(handle, "asic_info")
    return {"market_name": g.get("name", "AMD Instinct MI300X"), "vendor_id": "0x1002",
            "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
            "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": g.get("serial", "0x0000000000000000"),
            "oam_id": handle.index, "num_compute_units": 304, "target_graphics_version": "gfx942"}


def amdsmi_get_power_info(handle: amdsmi_processor_handle) -> dict[str, Any]:
    g = _check(handle, "power_info")
    watts = int(g["watts"])
    current = "N/A" if "current_socket_power" in g.get("unsupported", ()) else watts
    return {"current_socket_power": current, "average_socket_power": watts, "gfx_voltage": "N/A",
            "soc_voltage": "N/A", "mem_voltage": "N/A", "power_limit": 750}


def amdsmi_get_energy_count(handle: amdsmi_processor_handle) -> dict[str, Any]:
    """The accumulator advances at ``watts`` in real time from a large starting count."""
    g = _check(handle, "energy_count")
    now = time.time()
    count = int(1e9 + g["watts"] * (now - _T0) * 1e6 / _RESOLUTION_UJ)
    return {"power": count, "energy_accumulator": count, "counter_resolution": _RESOLUTION_UJ,
            "timestamp": int(now * 1e9)}


def amdsmi_get_gpu_activity(handle: amdsmi_processor_handle) -> dict[str, Any]:
    g = _check(handle, "activity")
    return {"gfx_activity": int(g.get("gfx_pct", 0)), "umc_activity": int(g.get("umc_pct", 0)),
            "mm_activity": "N/A"}


def amdsmi_get_gpu_memory_total(handle: amdsmi_processor_handle, mem_type: AmdSmiMemoryType) -> int:
    return int(_check(handle, "memory_total").get("mem_total_mib", 196_592) * _MIB)


def amdsmi_get_gpu_memory_usage(handle: amdsmi_processor_handle, mem_type: AmdSmiMemoryType) -> int:
    g = _check(handle, "memory_usage")
    procs = sum(p["mem_mib"] for _, p in _matched(handle))
    return int((g.get("mem_used_mib", 300) + procs) * _MIB)


def amdsmi_get_temp_metric(handle: amdsmi_processor_handle, sensor_type: AmdSmiTemperatureType,
                           metric: AmdSmiTemperatureMetric) -> int:
    name = {AmdSmiTemperatureType.EDGE: "edge", AmdSmiTemperatureType.HOTSPOT: "hotspot",
            AmdSmiTemperatureType.VRAM: "vram"}[sensor_type]
    return int(_check(handle, f"{name}_temp").get("temps", {}).get(name, 40))


def amdsmi_get_clock_info(handle: amdsmi_processor_handle, clock_type: AmdSmiClkType) -> dict[str, int]:
    name = {AmdSmiClkType.GFX: "gfx", AmdSmiClkType.MEM: "mem"}[clock_type]
    clk = int(_check(handle, f"{name}_clock").get("clocks", {}).get(name, 2100 if name == "gfx" else 1300))
    return {"clk": clk, "min_clk": 500, "max_clk": clk, "clk_locked": False, "clk_deep_sleep": False}


def _matched(handle: amdsmi_processor_handle) -> list[tuple[psutil.Process, dict[str, Any]]]:
    """Tracked scripts (radtrack's bootstrap) whose command line holds a proc's ``match``."""
    out = []
    for proc in psutil.process_iter(["pid", "cmdline", "create_time"]):
        line = " ".join(proc.info["cmdline"] or [])
        if "radtrack.script.bootstrap" not in line:
            continue
        out += [(proc, p) for p in handle.spec.get("procs", ()) if p["match"] in line]
    return out


def amdsmi_get_gpu_process_list(handle: amdsmi_processor_handle) -> list[dict[str, Any]]:
    """Each matched process with its memory and its GFX engine time (ns since it started,
    at its ``gfx_pct`` of the engine), as the real call lists them."""
    _check(handle, "process_list")
    now = time.time()
    out = []
    for proc, p in _matched(handle):
        mem = int(p["mem_mib"] * _MIB)
        busy_ns = int(p["gfx_pct"] / 100 * (now - proc.info["create_time"]) * 1e9)
        out.append({"name": "python3", "pid": proc.info["pid"], "mem": mem,
                    "engine_usage": {"gfx": busy_ns, "enc": 0},
                    "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": mem}})
    return out
