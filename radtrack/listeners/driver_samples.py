"""The driver's own sample buffer of one GPU reading (``nvmlDeviceGetSamples``).

Polling instantaneous power sees one reading per sensor refresh and misses what happens
between; the driver itself keeps a ring of power samples with their own timestamps,
measured on an H100 at one every 20 ms (about 50 a second) and 119 deep, so about 2.4 s
(benchmarks/results/h100-2026-11-22/driver-buffers.md). Reading it once a second with
the timestamp of the newest sample already taken returns exactly the samples that are
new, each once. The position survives a listener restart through ``resume_us`` (the
runner writes it on the last line of each read; radtrack/run/listen.py passes it back), so
only what the ring dropped while no listener ran is lost.

The utilisation buffers are not read: the driver refreshes them 5 times a second, the
pace smi already polls them at (UTIL_EVERY_S), so they hold nothing more.
"""

from __future__ import annotations

import time
from typing import Any

from radtrack.listeners.nvml import NA, nvml_query

NVML_TOTAL_POWER_SAMPLES = 0  # nvmlSamplingType_t
READ_EVERY_S = 1.0  # the ring holds ~2.4 s at 50 Hz: once a second never overruns it
# c_nvmlValue_t members by nvmlValueType_t
_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def sample_value(value: Any, value_type: int) -> float:
    """The number in a c_nvmlValue_t union of type ``value_type``."""
    return float(getattr(value, _MEMBERS[value_type]))


class DriverSamples:
    """New samples of one driver buffer, each once, in timestamp order.

    ``scale`` turns the driver's unit into the metric's (mW -> W: 1e-3). Timestamps are
    the driver's, CPU wall-clock microseconds (the same clock as
    nvmlDeviceGetProcessUtilization's), so ``t_us / 1e6`` is unix time.
    """

    def __init__(self, handle: Any, kind: int = NVML_TOTAL_POWER_SAMPLES, scale: float = 1e-3):
        self.handle = handle
        self.kind = kind
        self.scale = scale
        self.last_us = 0  # timestamp of the newest sample taken (emitted or skipped at open)
        self.history: list[tuple[int, float]] = []  # the ring's samples at open

    def open(self, resume_us: int | None = None, since_us: int | None = None) -> bool:
        """Whether the device offers the buffer. Sets where reading starts: after
        ``resume_us`` (the newest sample an earlier listener process emitted for this run),
        else after ``since_us`` (the run's start, when the listener started after it: the
        ring's samples since then belong to the run), else after the newest sample already
        in the ring (those predate the listener)."""
        got = self._fetch(0)
        if got is None:
            return False
        self.history = got
        if resume_us is not None:
            self.last_us = int(resume_us)
        elif since_us is not None:
            self.last_us = int(since_us)
        elif got:
            self.last_us = max(t for t, _ in got)
        else:  # an empty ring: anything stamped from now on is new
            self.last_us = int(time.time() * 1e6)
        return True

    def read(self) -> list[tuple[int, float]]:
        """Samples newer than the last read: (driver timestamp us, value in the metric's unit)."""
        got = self._fetch(self.last_us) or []
        new: dict[int, float] = {t: v for t, v in got if t > self.last_us}
        if new:
            self.last_us = max(new)
        return sorted(new.items())

    def _fetch(self, since_us: int) -> list[tuple[int, float]] | None:
        """The ring's samples newer than ``since_us``; [] when none, None when not offered."""
        import pynvml

        try:
            got = nvml_query("nvmlDeviceGetSamples", self.handle, self.kind, since_us)
        except pynvml.NVMLError_NotFound:  # nothing newer than since_us
            return []
        if got is NA:
            return None
        value_type, samples = got
        return [(int(s.timeStamp), sample_value(s.sampleValue, value_type) * self.scale)
                for s in samples]
