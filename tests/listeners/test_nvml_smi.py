"""NVML gate, device resolution and the smi listener, through autospec doubles fed with
the H100 recordings (tests/data/h100/)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys

import pynvml
import pytest
from gpu_doubles import H100_UUID, MIB, FakeGpu, FakeNvml, mig_gpu

from radtrack.errors import RadtrackError
from radtrack.listeners import nvml, runner
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.devices import resolve, run_devices, visible_entries
from radtrack.listeners.smi import SmiListener

# nvml-per-process.txt (two processes time-sharing) and nvml-per-process_mps.txt
PROC_399_BYTES, PROC_400_BYTES = 878706688, 778043392
PUTIL_399 = (1795323308194779, 70, 4)
PUTIL_400 = (1795323307995757, 30, 1)
MPS_SERVER_BYTES, MPS_472_BYTES, MPS_471_BYTES = 69206016, 476053504, 878706688


@pytest.fixture(autouse=True)
def _fresh_nvml():
    nvml.reset()
    yield
    nvml.reset()


@pytest.fixture
def child():
    """A real process in this test's process tree (stands in for the workload)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _listener(devices: list[str] | None = None, pid: int | None = None, interval: float = 0.1) -> SmiListener:
    return SmiListener(ListenerConfig(interval=interval, devices=devices or [], pid=pid))


# -- the gate -------------------------------------------------------------------------

def test_query_not_supported_and_missing_function_give_na(monkeypatch, caplog):
    gpu = FakeGpu(unsupported={"nvmlDeviceGetFanSpeed"})
    FakeNvml(monkeypatch, [gpu])
    assert nvml.nvml_query("nvmlDeviceGetFanSpeed", gpu) is nvml.NA
    assert nvml.nvml_query("nvmlDeviceGetTemperature", gpu, 0) == 38
    monkeypatch.delattr(pynvml, "nvmlDeviceGetPowerUsage")
    with caplog.at_level(logging.WARNING, logger="radtrack.listeners.nvml"):
        assert nvml.nvml_query("nvmlDeviceGetPowerUsage", gpu) is nvml.NA
        assert nvml.nvml_query("nvmlDeviceGetPowerUsage", gpu) is nvml.NA
    assert sum("nvmlDeviceGetPowerUsage" in r.message for r in caplog.records) == 1


def test_query_lets_real_failures_through(monkeypatch):
    gpu = FakeGpu()
    fake = FakeNvml(monkeypatch, [gpu])
    fake.calls["nvmlDeviceGetTemperature"].side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        nvml.nvml_query("nvmlDeviceGetTemperature", gpu, 0)


def test_nvml_initialised_once_lazily(monkeypatch):
    gpu = FakeGpu()
    fake = FakeNvml(monkeypatch, [gpu])
    assert fake.calls["nvmlInit"].call_count == 0
    for _ in range(3):
        nvml.nvml_query("nvmlDeviceGetTemperature", gpu, 0)
    assert fake.calls["nvmlInit"].call_count == 1


@pytest.mark.parametrize(("error", "reason"), [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "NVIDIA driver not installed"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "NVIDIA driver not loaded"),
])
def test_availability_names_the_missing_driver(monkeypatch, error, reason):
    fake = FakeNvml(monkeypatch, [FakeGpu()])
    fake.calls["nvmlInit"].side_effect = pynvml.NVMLError(error)
    why = nvml.nvml_available()
    assert not why and reason in why.reason
    assert not SmiListener.available()


def test_availability_without_gpu_and_with_one(monkeypatch):
    FakeNvml(monkeypatch, [])
    assert nvml.nvml_available().reason == "no NVIDIA GPU found by NVML"
    FakeNvml(monkeypatch, [FakeGpu()])
    assert SmiListener.available()


# -- devices --------------------------------------------------------------------------

def test_visible_entries_prefers_config_then_environment():
    assert visible_entries(["1", " GPU-abc "], {"CUDA_VISIBLE_DEVICES": "0"}) == ["1", "GPU-abc"]
    assert visible_entries([], {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert visible_entries([], {}) is None
    # CUDA ignores everything from the first invalid entry on
    assert visible_entries([], {"CUDA_VISIBLE_DEVICES": "1,-1,0"}) == ["1"]
    assert visible_entries([], {"CUDA_VISIBLE_DEVICES": ""}) == []


def test_resolve_index_uuid_prefix_and_all(monkeypatch):
    a, b = FakeGpu(), FakeGpu(uuid="GPU-11111111-2222-3333-4444-555555555555")
    FakeNvml(monkeypatch, [a, b])
    devs = resolve(["1", H100_UUID])
    assert [(d.scope, d.handle, d.index) for d in devs] == [("gpu0", b, 1), ("gpu1", a, 0)]
    assert resolve(["GPU-1111"])[0].handle is b
    assert [d.uuid for d in resolve(None)] == [a.uuid, b.uuid]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [d.handle for d in run_devices([])] == [b]


def test_resolve_mig_uuid_and_legacy_form(monkeypatch):
    parent = mig_gpu(2)
    FakeNvml(monkeypatch, [parent])
    inst = parent.mig[1]
    (dev,) = resolve([inst.uuid])
    assert dev.handle is inst and dev.parent is parent and dev.is_mig and dev.gpu_instance_id == 8
    # drivers that do not look MIG UUIDs up directly: found by walking the instances
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByUUID", _only_physical(parent))
    assert resolve([inst.uuid])[0].handle is inst
    (legacy,) = resolve([f"MIG-{H100_UUID}/8/0"])
    assert legacy.handle is inst


def _only_physical(parent):
    def lookup(uuid):
        if uuid == parent.uuid:
            return parent
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
    return lookup


@pytest.mark.parametrize(("entry", "message"), [
    ("3", "does not exist: NVML sees 1 GPU(s)"),
    ("GPU-deadbeef", "matches no GPU"),
    ("MIG-deadbeef", "matches no MIG instance"),
    ("cuda:0", "is not a GPU index"),
])
def test_resolve_names_the_bad_entry(monkeypatch, entry, message):
    FakeNvml(monkeypatch, [FakeGpu()])
    with pytest.raises(RadtrackError, match=re.escape(message)) as err:
        resolve([entry])
    assert repr(entry) in str(err.value)


# -- smi --------------------------------------------------------------------------------

def test_a_reading_the_device_lacks_is_asked_once(monkeypatch):
    """A reading NVML answers "not supported" at the probe (an H100 has no fan) is never asked
    again: each ask costs 0.4-0.6 ms under load. The readings it has are read as before."""
    gpu = FakeGpu(unsupported={"nvmlDeviceGetFanSpeed", "nvmlDeviceGetTotalEccErrors"})
    fake = FakeNvml(monkeypatch, [gpu])
    smi = _listener()
    keys = {s.key for s in smi.probe()}
    asked = {f: fake.calls[f].call_count for f in (
        "nvmlDeviceGetFanSpeed", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetTemperature")}
    assert asked["nvmlDeviceGetFanSpeed"] == 1 and asked["nvmlDeviceGetTotalEccErrors"] == 2
    for _ in range(3):
        smi._states[0].slow.force()  # every once-a-second reading due
        values = smi.sample()
        assert "smi/gpu0/temp_c" in values and "smi/gpu0/fan_pct" not in values
    assert fake.calls["nvmlDeviceGetFanSpeed"].call_count == 1
    assert fake.calls["nvmlDeviceGetTotalEccErrors"].call_count == 2
    assert fake.calls["nvmlDeviceGetTemperature"].call_count == asked["nvmlDeviceGetTemperature"] + 3
    assert "smi/gpu0/fan_pct" not in keys and "smi/gpu0/ecc_corrected_volatile_count" not in keys
    assert "gpu0/fan_pct" in smi.tags()["radtrack.listener.smi.unsupported"]


def test_probe_and_sample_h100(monkeypatch):
    gpu = FakeGpu(unsupported={"nvmlDeviceGetFanSpeed"}, reasons=0x4 | 0x40, util=(100, 7),
                  mem_used=1595 * MIB)
    FakeNvml(monkeypatch, [gpu])
    smi = _listener()
    keys = {s.key for s in smi.probe()}
    assert "smi/gpu0/fan_pct" not in keys
    assert "smi/gpu0/proc_mem_used_mib" not in keys  # no pid: no per-process readings
    tags = smi.tags()
    # the doubles offer no driver power buffer unless a test fills it (test_power_samples.py)
    assert tags["radtrack.listener.smi.unsupported"] == "gpu0/power_sample_w,gpu0/fan_pct"
    assert tags["radtrack.listener.smi.gpu0.uuid"] == H100_UUID
    assert tags["radtrack.listener.smi.gpu0.name"] == "NVIDIA H100 80GB HBM3"
    s1, s2 = smi.sample(), smi.sample()
    # the second reading, right after the first, holds only what is read every interval
    assert {k.removeprefix("smi/gpu0/") for k in s2} == {
        "power_w", "sm_clock_mhz", "clock_reasons_mask",
        "throttle_sw_power_cap_flag", "throttle_hw_slowdown_flag", "throttle_thermal_flag"}
    assert set(s1) <= keys and "smi/gpu0/fan_pct" not in s1
    assert s1["smi/gpu0/power_w"] == pytest.approx(73.183)  # field 186, not nvmlDeviceGetPowerUsage
    assert s1["smi/gpu0/power_avg_w"] == pytest.approx(73.795)
    assert s1["smi/gpu0/mem_temp_c"] == 39 and s1["smi/gpu0/temp_c"] == 38
    assert s1["smi/gpu0/mem_used_mib"] == 1595 and s1["smi/gpu0/mem_total_mib"] == 81559
    assert (s1["smi/gpu0/gpu_util_pct"], s1["smi/gpu0/mem_util_pct"]) == (100, 7)
    assert (s1["smi/gpu0/sm_clock_mhz"], s1["smi/gpu0/mem_clock_mhz"]) == (345, 2619)
    assert s1["smi/gpu0/pstate_level"] == 0
    assert s1["smi/gpu0/clock_reasons_mask"] == 0x44
    assert s1["smi/gpu0/throttle_sw_power_cap_flag"] == 1
    assert s1["smi/gpu0/throttle_thermal_flag"] == 1
    assert s1["smi/gpu0/throttle_hw_slowdown_flag"] == 0
    assert s1["smi/gpu0/pcie_tx_bytes_per_s"] == 54699 * 1024  # throughput fallback
    assert s1["smi/gpu0/ecc_uncorrected_volatile_count"] == 0
    # energy: cumulative from the probe, one 6983 mJ step per read
    assert s1["smi/gpu0/energy_j"] == pytest.approx(6.983)
    smi._states[0].slow.force()  # as if a second had passed: slow readings, not yet energy
    s3 = smi.sample()
    assert "smi/gpu0/pstate_level" in s3 and "smi/gpu0/energy_j" not in s3
    smi._states[0].energy.force()  # as if five seconds had passed
    assert smi.sample()["smi/gpu0/energy_j"] == pytest.approx(2 * 6.983)


def test_each_reading_at_its_own_pace(monkeypatch):
    """At --interval 0.1 with scheduling jitter, over 10 s: power, SM clock and clock
    reasons every sample, utilisation and memory used 5 times a second, temperature,
    memory clock, the slow and the per-process readings once a second, energy every 5 s; the final reading at stop has everything."""
    other = os.getppid()
    FakeNvml(monkeypatch, [FakeGpu(procs=[(other, PROC_400_BYTES)], putil=[(other, *PUTIL_400)])])
    smi = _listener(pid=os.getpid())
    now = [1000.0]
    smi.clock = lambda: now[0]
    smi.probe()
    counts: dict[str, int] = {}
    for k in range(100):
        now[0] = 1000.0 + k * 0.1 + (0.004 if k % 3 else -0.003)
        for key in smi.sample():
            counts[key] = counts.get(key, 0) + 1
    assert counts["smi/gpu0/power_w"] == counts["smi/gpu0/sm_clock_mhz"] == 100
    assert counts["smi/gpu0/clock_reasons_mask"] == 100
    assert counts["smi/gpu0/gpu_util_pct"] == counts["smi/gpu0/mem_used_mib"] == 50
    assert counts["smi/gpu0/temp_c"] == counts["smi/gpu0/mem_clock_mhz"] == 10
    assert counts["smi/gpu0/power_avg_w"] == counts["smi/gpu0/pstate_level"] == 10
    assert counts["smi/gpu0/mem_total_mib"] == 10
    assert counts["smi/gpu0/proc_mem_used_mib"] == counts["smi/gpu0/all_procs_sm_util_pct"] == 10
    assert counts["smi/gpu0/energy_j"] == 2
    now[0] += 0.1
    final = smi.final_sample()
    assert {"smi/gpu0/energy_j", "smi/gpu0/gpu_util_pct", "smi/gpu0/power_avg_w", "smi/gpu0/temp_c",
            "smi/gpu0/proc_mem_used_mib"} <= set(final)


def test_at_one_second_every_reading_is_taken_every_sample(monkeypatch):
    """--interval 1: nothing but the counters read at their own pace (energy every 5 s,
    ECC every 10 s, PCIe every 5 s, its blocking fallback every 10 s) skips a sample."""
    other = os.getppid()
    FakeNvml(monkeypatch, [FakeGpu(procs=[(other, PROC_400_BYTES)], putil=[(other, *PUTIL_400)])])
    smi = _listener(pid=os.getpid(), interval=1.0)
    now = [1000.0]
    smi.clock = lambda: now[0]
    paced = {f"smi/gpu0/{q}" for q in ("energy_j", "ecc_corrected_volatile_count",
                                       "ecc_uncorrected_volatile_count", "pcie_tx_bytes_per_s",
                                       "pcie_rx_bytes_per_s")}
    keys = {s.key for s in smi.probe()} - paced
    for k in range(6):
        now[0] = 1000.0 + k * 1.0 + (0.02 if k % 2 else -0.02)
        got = set(smi.sample())
        assert got >= keys, k


def test_instant_power_field_missing_falls_back_to_power_usage(monkeypatch):
    gpu = FakeGpu(fields={82: 39})  # an older GPU: no 185/186 fields
    FakeNvml(monkeypatch, [gpu])
    smi = _listener()
    keys = {s.key for s in smi.probe()}
    assert "smi/gpu0/power_avg_w" not in keys
    assert "gpu0/power_avg_w" in smi.tags()["radtrack.listener.smi.unsupported"].split(",")
    assert smi.sample()["smi/gpu0/power_w"] == pytest.approx(69.94)


def test_pcie_byte_counters_give_a_rate(monkeypatch):
    gpu = FakeGpu()
    gpu.fields.update({197: 10_000_000, 198: 20_000_000})
    fake = FakeNvml(monkeypatch, [gpu])
    smi = _listener()
    now = [100.0]
    smi.clock = lambda: now[0]
    assert "smi/gpu0/pcie_rx_bytes_per_s" in {s.key for s in smi.probe()}
    gpu.fields[197] += 25_000_000
    # right after the probe: too short a window for a rate, the probe's reading stays the baseline
    assert "smi/gpu0/pcie_tx_bytes_per_s" not in smi.sample()
    now[0] += 1.0
    assert "smi/gpu0/pcie_tx_bytes_per_s" not in smi.sample()  # read every 5 s, not every second
    now[0] += 4.0
    s = smi.sample()  # 5 s after the probe's reading
    assert s["smi/gpu0/pcie_tx_bytes_per_s"] == pytest.approx(5_000_000)  # 25 MB over 5 s
    assert s["smi/gpu0/pcie_rx_bytes_per_s"] == 0
    assert fake.calls["nvmlDeviceGetPcieThroughput"].call_count == 0  # 20 ms per call: avoided


def test_pcie_throughput_fallback_is_read_every_ten_seconds_never_at_the_interval(monkeypatch):
    """Without the byte counters, nvmlDeviceGetPcieThroughput (20 ms of wall time a call,
    holding up the sampler) is read at the first reading, every 10 s and at the final one."""
    fake = FakeNvml(monkeypatch, [FakeGpu()])  # fields 197/198 absent: the fallback
    smi = _listener()
    now = [1000.0]
    smi.clock = lambda: now[0]
    assert "smi/gpu0/pcie_tx_bytes_per_s" in {s.key for s in smi.probe()}
    fake.calls["nvmlDeviceGetPcieThroughput"].reset_mock()
    seen = []
    for k in range(200):  # 20 s at 0.1 s
        now[0] = 1000.0 + k * 0.1
        if "smi/gpu0/pcie_tx_bytes_per_s" in smi.sample():
            seen.append(round(now[0] - 1000.0, 1))
    assert seen == [0.0, 10.0]
    assert fake.calls["nvmlDeviceGetPcieThroughput"].call_count == 2 * 2  # tx and rx each time
    now[0] += 0.1
    assert "smi/gpu0/pcie_tx_bytes_per_s" in smi.final_sample()


def test_unsupported_readings_are_never_emitted(monkeypatch):
    gpu = FakeGpu(fields={}, unsupported={
        "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetPcieThroughput"})
    FakeNvml(monkeypatch, [gpu])
    smi = _listener()
    keys = {s.key for s in smi.probe()}
    unsupported = set(smi.tags()["radtrack.listener.smi.unsupported"].split(","))
    for q in ("power_w", "power_avg_w", "energy_j", "ecc_corrected_volatile_count", "clock_reasons_mask",
              "throttle_thermal_flag", "pcie_tx_bytes_per_s", "mem_temp_c"):
        assert f"gpu0/{q}" in unsupported and f"smi/gpu0/{q}" not in keys
    sample = smi.sample()
    assert not any(k.endswith(("power_w", "energy_j", "_flag")) for k in sample)
    assert sample["smi/gpu0/temp_c"] == 38


def test_per_process_attribution_time_sharing(monkeypatch, child):
    other = os.getppid()  # a live process outside the test's tree
    gpu = FakeGpu(procs=[(other, PROC_400_BYTES), (child, PROC_399_BYTES)],
                  putil=[(child, *PUTIL_399), (other, *PUTIL_400)])
    FakeNvml(monkeypatch, [gpu])
    smi = _listener(pid=os.getpid())
    keys = {s.key for s in smi.probe()}
    assert {"smi/gpu0/proc_mem_used_mib", "smi/gpu0/proc_sm_util_pct"} <= keys
    s = smi.sample()
    assert s["smi/gpu0/proc_mem_used_mib"] == PROC_399_BYTES / MIB  # 838 MiB, not 838 + 742
    gpu.putil.append((child, PUTIL_399[0] + 100_000, 65, 3))
    assert "smi/gpu0/proc_sm_util_pct" not in smi.sample()  # read at most once a second...
    gpu.putil.append((child, PUTIL_399[0] + 200_000, 75, 3))
    smi._states[0].slow.force()  # ...as if that second had passed
    # ...averaging every driver sample since the last read: nothing is lost by reading less
    assert smi.sample()["smi/gpu0/proc_sm_util_pct"] == 70


def test_per_process_first_sample_counts_only_the_tree(monkeypatch, child):
    other = os.getppid()
    gpu = FakeGpu(procs=[(other, PROC_400_BYTES), (child, PROC_399_BYTES)], putil=[])
    FakeNvml(monkeypatch, [gpu])
    smi = _listener(pid=os.getpid())
    smi.probe()
    gpu.putil += [(child, *PUTIL_399), (other, *PUTIL_400)]
    assert smi.sample()["smi/gpu0/proc_sm_util_pct"] == 70


def test_per_process_under_mps_memory_yes_no_fake_utilisation(monkeypatch, child):
    other, server = os.getppid(), 1
    gpu = FakeGpu(procs=[(server, MPS_SERVER_BYTES), (other, MPS_472_BYTES), (child, MPS_471_BYTES)],
                  putil=[(server, 1795323308194779, 95, 6)])
    FakeNvml(monkeypatch, [gpu])
    smi = _listener(pid=os.getpid())
    smi.probe()
    s = smi.sample()
    assert s["smi/gpu0/proc_mem_used_mib"] == MPS_471_BYTES / MIB
    # the work is booked to the MPS server: no reading rather than a made-up 0 or 95
    assert "smi/gpu0/proc_sm_util_pct" not in s


def test_mps_client_gets_the_servers_share_and_every_process_total(monkeypatch, child):
    """As recorded on the H100 (mps/mps_per-client-signals.txt): clients listed with memory,
    an SM figure for the server only; a client may even be sampled at 0."""
    other, server = os.getppid(), 1
    gpu = FakeGpu(procs=[(server, MPS_SERVER_BYTES), (other, MPS_472_BYTES), (child, MPS_471_BYTES)],
                  mps_procs=[(other, MPS_472_BYTES), (child, MPS_471_BYTES)],
                  names={server: "nvidia-cuda-mps-server"})
    FakeNvml(monkeypatch, [gpu])
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/radtrack-mps-pipe")
    smi = _listener(pid=os.getpid())
    keys = {s.key for s in smi.probe()}
    assert "smi/gpu0/proc_sm_util_pct" not in keys
    assert "MPS client" in smi.tags()["radtrack.listener.smi.gpu0.proc_sm_util_pct"]
    gpu.putil += [(server, 1795323308194779, 76, 9), (child, 1795323308194780, 0, 0)]
    s = smi.sample()
    assert "smi/gpu0/proc_sm_util_pct" not in s  # never the client's recorded 0
    assert s["smi/gpu0/mps_sm_util_pct"] == 76
    assert s["smi/gpu0/all_procs_sm_util_pct"] == 76
    assert s["smi/gpu0/proc_mem_used_mib"] == MPS_471_BYTES / MIB


def test_every_process_total_tells_other_processes_apart(monkeypatch, child):
    other = os.getppid()
    gpu = FakeGpu(procs=[(other, PROC_400_BYTES), (child, PROC_399_BYTES)],
                  putil=[(child, *PUTIL_399), (other, *PUTIL_400)])
    FakeNvml(monkeypatch, [gpu])
    smi = _listener(pid=os.getpid())
    smi.probe()
    gpu.putil += [(child, PUTIL_399[0] + 10, 70, 4), (other, PUTIL_399[0] + 20, 30, 1)]
    smi._states[0].slow.force()
    s = smi.sample()
    assert s["smi/gpu0/proc_sm_util_pct"] == 70
    assert s["smi/gpu0/all_procs_sm_util_pct"] == 100
    assert "smi/gpu0/mps_sm_util_pct" not in s


def test_per_process_tree_not_on_gpu_is_zero(monkeypatch, child):
    other = os.getppid()
    gpu = FakeGpu(procs=[(other, PROC_400_BYTES)], putil=[(other, *PUTIL_400)])
    FakeNvml(monkeypatch, [gpu])
    smi = _listener(pid=os.getpid())
    smi.probe()
    gpu.putil.append((other, PUTIL_400[0] + 1, 31, 1))
    s = smi.sample()
    assert s["smi/gpu0/proc_mem_used_mib"] == 0 and s["smi/gpu0/proc_sm_util_pct"] == 0


def test_mig_instance_reports_what_nvml_offers(monkeypatch, child):
    parent = mig_gpu(1)
    inst = parent.mig[0]
    inst.procs = [(child, 512 * MIB)]
    inst.mem_used, inst.mem_total = 600 * MIB, 9984 * MIB
    FakeNvml(monkeypatch, [parent])
    smi = _listener(devices=[inst.uuid], pid=os.getpid())
    keys = {s.key for s in smi.probe()}
    tags = smi.tags()
    assert tags["radtrack.listener.smi.gpu0.mig"] == "true"
    assert tags["radtrack.listener.smi.gpu0.uuid"] == inst.uuid
    unsupported = tags["radtrack.listener.smi.unsupported"].split(",")
    assert {"gpu0/gpu_util_pct", "gpu0/proc_sm_util_pct"} <= set(unsupported)
    # an instance has no power sensor: power and energy are the parent GPU's, said in a tag
    assert tags["radtrack.listener.smi.gpu0.parent_uuid"] == parent.uuid
    assert {"gpu0/power_w", "gpu0/energy_j"}.isdisjoint(unsupported)
    s = smi.sample()
    assert set(s) <= keys
    assert "smi/gpu0/gpu_util_pct" not in s
    assert s["smi/gpu0/power_w"] == parent.power_mw / 1000
    assert s["smi/gpu0/mem_total_mib"] == 9984 and s["smi/gpu0/proc_mem_used_mib"] == 512


def test_runner_json_lines_end_to_end(monkeypatch):
    FakeNvml(monkeypatch, [FakeGpu(unsupported={"nvmlDeviceGetFanSpeed"}), FakeGpu(uuid="GPU-2")])
    out = io.StringIO()
    code = runner.run("smi", ListenerConfig(interval=0.01, devices=["1", "0"]), out=out, count=3)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0, lines
    hello, samples = lines[0], lines[1:]
    assert hello["type"] == "hello" and hello["listener"] == "smi"
    assert hello["tags"]["radtrack.listener.smi.gpu0.uuid"] == "GPU-2"
    assert hello["tags"]["radtrack.listener.smi.unsupported"] == \
        "gpu0/power_sample_w,gpu1/power_sample_w,gpu1/fan_pct"
    specs = {m["key"]: m for m in hello["metrics"]}
    assert specs["smi/gpu0/power_w"]["unit"] == "W"
    assert [s["type"] for s in samples] == ["sample"] * 3
    assert all(s["v"]["smi/gpu1/power_w"] == pytest.approx(73.183) for s in samples)
    # the energy counter (5 ms a read) is read at the first sample, then every 5 s
    assert "smi/gpu0/energy_j" in samples[0]["v"]
    assert not any("smi/gpu0/energy_j" in s["v"] for s in samples[1:])


def test_runner_reports_a_bad_device_as_one_error_line(monkeypatch):
    FakeNvml(monkeypatch, [FakeGpu()])
    out = io.StringIO()
    assert runner.run("smi", ListenerConfig(devices=["5"]), out=out, count=1) == 1
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert line["type"] == "error" and "'5' does not exist" in line["message"]


def test_nvml_and_smi_inventories_pick_by_the_same_rules(monkeypatch):
    """radtrack.gpus (the launcher's checks) and this resolver name the same GPU for an entry."""
    from radtrack import gpus
    from radtrack.device_entries import parse_cuda_visible

    a, b = FakeGpu(), FakeGpu(uuid="GPU-11111111-2222-3333-4444-555555555555")
    FakeNvml(monkeypatch, [a, b])
    smi = [gpus.Gpu(index=0, uuid=a.uuid, name="", mig_mode="", driver=""),
           gpus.Gpu(index=1, uuid=b.uuid, name="", mig_mode="", driver="")]
    for entry in ("1", "GPU-1111", H100_UUID):
        assert resolve([entry])[0].index == gpus.resolve_index(entry, smi)
    assert parse_cuda_visible("GPU-1111, 0,x,1") == ["GPU-1111", "0"]
