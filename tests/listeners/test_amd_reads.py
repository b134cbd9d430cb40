"""The amdsmi listener's readings on known answers (radtrack/listeners/amd_reads.py): the
library's "N/A" and errors are no reading (never a 0), device entries pick GPUs by index or
UUID prefix, and a process's share of the GFX engine is its engine time over the time
between two readings, a process first seen counting from then."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from radtrack.listeners.amd_reads import NA, AmdGpu, number, pick

MIB = 1024 * 1024


class Lib(SimpleNamespace):
    """A stand-in for the bindings: what each call answers, or raises."""

    def amdsmi_get_gpu_process_list(self, handle: Any) -> list[dict]:
        return self.procs

    def amdsmi_get_power_info(self, handle: Any) -> dict:
        if self.power is None:
            raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")
        return self.power


def _proc(pid: int, gfx_ns: int, vram_mib: float) -> dict:
    return {"pid": pid, "mem": int(vram_mib * MIB), "engine_usage": {"gfx": gfx_ns, "enc": 0},
            "memory_usage": {"vram_mem": int(vram_mib * MIB), "gtt_mem": 0, "cpu_mem": 0}}


def test_na_and_errors_are_no_reading() -> None:
    assert number("N/A") is NA and number(None) is NA and number(NA) is NA and number(True) is NA
    assert number(1200, 0.5) == 600.0
    gpu = AmdGpu(Lib(power=None), "h", 0, "gpu0")
    assert gpu.power() is NA  # the library's "not supported": not a 0
    gpu.lib.power = {"current_socket_power": "N/A", "average_socket_power": 310}
    assert gpu.power() == 310.0 and gpu.power_source == "average_socket_power"
    gpu.refused.add("power_info")
    assert gpu.power() is NA  # refused at the probe: never asked again


def test_entries_pick_gpus_by_index_or_uuid_prefix() -> None:
    handles = ["h0", "h1", "h2"]
    uuids = {"h0": "aa11-0000", "h1": "bb22-0000", "h2": "cc33-0000"}
    assert pick([], handles, uuids.get) == [(0, "h0"), (1, "h1"), (2, "h2")]
    assert pick(["2", "0"], handles, uuids.get) == [(2, "h2"), (0, "h0")]
    assert pick(["BB22", "7"], handles, uuids.get) == [(1, "h1")]  # an index past the last: none


def test_a_process_share_is_its_engine_time_between_readings() -> None:
    lib = Lib(procs=[_proc(10, 5_000_000_000, 1200), _proc(20, 1_000_000_000, 300)])
    gpu = AmdGpu(lib, "h", 0, "gpu0")
    first = gpu.processes({10}, now=100.0)
    assert first == {"proc_mem_used_mib": 1200.0}  # shares need a previous reading
    # one second later: pid 10 ran 0.75 s of the engine, pid 20 0.25 s; pid 30 is new
    lib.procs = [_proc(10, 5_750_000_000, 1200), _proc(20, 1_250_000_000, 300), _proc(30, 9_000_000_000, 50)]
    second = gpu.processes({10, 30}, now=101.0)
    assert second["proc_mem_used_mib"] == pytest.approx(1250.0)
    assert second["proc_sm_util_pct"] == pytest.approx(75.0)  # pid 30's 9 s predate the window
    assert second["all_procs_sm_util_pct"] == pytest.approx(100.0)
    lib.procs = []
    assert gpu.processes({10}, now=102.0) == {"proc_mem_used_mib": 0.0, "proc_sm_util_pct": 0.0,
                                              "all_procs_sm_util_pct": 0.0}
