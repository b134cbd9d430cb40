"""listeners/nvml_direct.py: one driver call where pynvml makes two, with pynvml's results.

The driver is emulated at the C boundary (pynvml's function pointers), so pynvml's own
wrappers and the one-call versions run the same driver and must answer alike. On a GPU:
tests/listeners/test_gpu_power_samples.py and test_gpu_listeners.py.
"""

from __future__ import annotations

import ctypes

import pynvml
import pytest

from radtrack.listeners import nvml_direct


class FakeDriver:
    """nvmlDeviceGetSamples / nvmlDeviceGetProcessUtilization at the C boundary: a power
    ring of ``depth`` samples and ``procs`` per-process samples; counts every call."""

    def __init__(self, depth: int = 119, procs: int = 3, ring: int | None = None):
        self.depth, self.procs = depth, procs
        self.ring = [(1_000 + 20 * i, 300_000 + i) for i in range(depth if ring is None else ring)]
        self.calls = {"nvmlDeviceGetSamples": 0, "nvmlDeviceGetProcessUtilization": 0}

    def pointer(self, name: str):
        return {"nvmlDeviceGetSamples": self.samples,
                "nvmlDeviceGetProcessUtilization": self.putil}[name]

    def samples(self, handle, kind, since, value_type, count, buf):
        self.calls["nvmlDeviceGetSamples"] += 1
        count, value_type = count._obj, value_type._obj
        value_type.value = 1  # unsigned int
        if buf is None:
            count.value = self.depth  # what the driver says: the ring's depth
            return pynvml.NVML_SUCCESS
        new = [s for s in self.ring if s[0] > since.value]
        if not new:
            return pynvml.NVML_ERROR_NOT_FOUND
        new = new[:count.value]
        for i, (t, v) in enumerate(new):
            buf[i].timeStamp, buf[i].sampleValue.uiVal = t, v
        count.value = len(new)
        return pynvml.NVML_SUCCESS

    def putil(self, handle, buf, count, since):
        self.calls["nvmlDeviceGetProcessUtilization"] += 1
        count = count._obj
        if buf is None or count.value < self.procs:
            count.value = self.procs
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        for i in range(self.procs):
            buf[i].pid, buf[i].timeStamp, buf[i].smUtil = 100 + i, since.value + 1, 10 * i
        count.value = self.procs
        return pynvml.NVML_SUCCESS


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer", fake.pointer)
    monkeypatch.setattr(nvml_direct, "_DIRECT", {
        "nvmlDeviceGetSamples": nvml_direct._Samples(),
        "nvmlDeviceGetProcessUtilization": nvml_direct._ProcessUtilization()})
    return fake


HANDLE = ctypes.cast(ctypes.c_void_p(0x1234), pynvml.c_nvmlDevice_t)


def _direct(name: str):
    fn = nvml_direct.replacement(name, getattr(pynvml, name), pynvml)
    assert fn is not getattr(pynvml, name)  # pynvml's own function: the one-call version
    return fn


def _ts(got):
    return [(s.timeStamp, s.sampleValue.uiVal) for s in got[1]]


def test_power_ring_in_one_call_a_read_same_samples_as_pynvml(driver):
    read = _direct("nvmlDeviceGetSamples")
    for since in (0, 1_500, 3_000):
        ours = read(HANDLE, 0, since)
        driver.calls["nvmlDeviceGetSamples"] = 0
        theirs = pynvml.nvmlDeviceGetSamples(HANDLE, 0, since)
        assert driver.calls["nvmlDeviceGetSamples"] == 2  # pynvml: size, then fill
        assert ours[0] == theirs[0] and _ts(ours) == _ts(theirs)
    driver.calls["nvmlDeviceGetSamples"] = 0
    read(HANDLE, 0, 2_000)
    assert driver.calls["nvmlDeviceGetSamples"] == 1  # the depth was asked once, before
    with pytest.raises(pynvml.NVMLError_NotFound):  # nothing newer: as pynvml raises
        read(HANDLE, 0, 10**9)


def test_a_buffer_that_comes_back_full_is_read_again_pynvmls_way(driver):
    driver.depth, driver.ring = 50, [(1_000 + 20 * i, i) for i in range(80)]
    read = _direct("nvmlDeviceGetSamples")
    got = read(HANDLE, 0, 0)
    driver.calls["nvmlDeviceGetSamples"] = 0
    assert _ts(got) == _ts(pynvml.nvmlDeviceGetSamples(HANDLE, 0, 0))  # never fewer than pynvml's
    driver.depth = 119  # the depth is asked again at the next read
    assert [t for t, _ in _ts(read(HANDLE, 0, 0))] == [t for t, _ in driver.ring]


def test_process_utilisation_grows_its_buffer_and_matches_pynvml(driver):
    driver.procs = 100  # more than the first buffer holds
    read = _direct("nvmlDeviceGetProcessUtilization")
    ours = read(HANDLE, 5)
    theirs = pynvml.nvmlDeviceGetProcessUtilization(HANDLE, 5)
    assert [(s.pid, s.timeStamp, s.smUtil) for s in ours] == [(s.pid, s.timeStamp, s.smUtil) for s in theirs]
    driver.calls["nvmlDeviceGetProcessUtilization"] = 0
    read(HANDLE, 6)
    assert driver.calls["nvmlDeviceGetProcessUtilization"] == 1  # the grown buffer is kept


def test_doubles_in_pynvmls_place_are_called_as_they_are(driver, monkeypatch):
    def double(handle, kind, since):
        return (1, [])
    monkeypatch.setattr(pynvml, "nvmlDeviceGetSamples", double)
    assert nvml_direct.replacement("nvmlDeviceGetSamples", double, pynvml) is double
    assert nvml_direct.replacement("nvmlDeviceGetPowerUsage", pynvml.nvmlDeviceGetPowerUsage,
                                   pynvml) is pynvml.nvmlDeviceGetPowerUsage
