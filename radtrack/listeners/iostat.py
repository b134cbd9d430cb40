"""iostat: per-disk read/write bytes/s and ops/s, network bytes/s (psutil counters)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

# psutil is imported where it is used, not here: the launcher imports this module (the
# listener's class) before its scripts start, and psutil's import takes ~15 ms
from radtrack.listeners.base import HOST_SAMPLER, Listener, MetricSpec, Series, rate_window

_SAFE = re.compile(r"[^A-Za-z0-9_\-.]")


_DISK = "psutil.disk_io_counters"
_NET = "psutil.net_io_counters"
# every key iostat emits, with what it is: the host's devices, whoever moved the bytes
SERIES = (
    Series("iostat/<disk>/read_bytes_per_s", "B/s", "io", "host", "host disk <disk> reads", "B/s",
           source=_DISK),
    Series("iostat/<disk>/write_bytes_per_s", "B/s", "io", "host", "host disk <disk> writes", "B/s",
           source=_DISK),
    Series("iostat/<disk>/read_ops_per_s", "1/s", "io", "host", "host disk <disk> read operations",
           "operations/s", source=_DISK),
    Series("iostat/<disk>/write_ops_per_s", "1/s", "io", "host", "host disk <disk> write operations",
           "operations/s", source=_DISK),
    Series("iostat/net/recv_bytes_per_s", "B/s", "io", "host", "host network received", "B/s",
           "bytes received, all NICs but lo", _NET),
    Series("iostat/net/sent_bytes_per_s", "B/s", "io", "host", "host network sent", "B/s",
           "bytes sent, all NICs but lo", _NET),
)
_BY_DISK = SERIES[:4]


def _scope(name: str) -> str:
    return _SAFE.sub("_", name)


class IostatListener(Listener):
    name = "iostat"
    series = SERIES

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        return HOST_SAMPLER  # psutil's counters share the wake-ups of smi's or top's sampler

    def probe(self) -> list[MetricSpec]:
        import psutil
        disks = psutil.disk_io_counters(perdisk=True) or {}
        nics = psutil.net_io_counters(pernic=True) or {}
        self._disks = sorted(d for d in disks if not d.startswith(("loop", "ram")))
        self._nics = sorted(n for n in nics if n != "lo")
        specs = []
        for d in self._disks:
            what = ("bytes read from", "bytes written to", "read operations on", "write operations on")
            specs += [s.spec(s.pattern.replace("<disk>", _scope(d)), f"{w} {d}")
                      for s, w in zip(_BY_DISK, what, strict=True)]
        specs += [s.spec(s.pattern) for s in SERIES[4:]]
        self._prev = self._read()
        return specs

    def _read(self) -> tuple[float, dict[str, tuple[int, int, int, int]], tuple[int, int]]:
        import psutil

        disks = psutil.disk_io_counters(perdisk=True) or {}
        nics = psutil.net_io_counters(pernic=True) or {}
        d = {k: (v.read_bytes, v.write_bytes, v.read_count, v.write_count)
             for k, v in disks.items() if k in self._disks}
        recv = sum(nics[n].bytes_recv for n in self._nics if n in nics)
        sent = sum(nics[n].bytes_sent for n in self._nics if n in nics)
        return time.monotonic(), d, (recv, sent)

    def sample(self) -> dict[str, float]:
        now = self._read()
        t0, d0, n0 = self._prev
        t1, d1, n1 = now
        if not rate_window(t0, t1, self.config.interval):
            return {}  # whole operations counted over a few ms: spikes, not rates
        self._prev = now
        dt = t1 - t0
        out: dict[str, float] = {}
        names = ("read_bytes_per_s", "write_bytes_per_s", "read_ops_per_s", "write_ops_per_s")
        for disk, cur in d1.items():
            old = d0.get(disk)
            if old is None:
                continue
            for qty, a, b in zip(names, old, cur, strict=True):
                out[f"iostat/{_scope(disk)}/{qty}"] = max(b - a, 0) / dt
        out["iostat/net/recv_bytes_per_s"] = max(n1[0] - n0[0], 0) / dt
        out["iostat/net/sent_bytes_per_s"] = max(n1[1] - n0[1], 0) / dt
        return out
