"""top: host CPU, memory, load and temperatures, and the run's process tree (psutil)."""

from __future__ import annotations

import os
import time

import psutil

from radtrack.listeners.base import Listener, ListenerConfig, MetricSpec
from radtrack.listeners.proctree import ProcessTree

_PROC_FIELDS = [
    ("top/proc/cpu_pct", "%", "CPU of the run's process tree (100 = one core)", "Process.cpu_percent"),
    ("top/proc/rss_mib", "MiB", "resident memory of the run's process tree", "Process.memory_info"),
    ("top/proc/threads_count", "count", "threads in the run's process tree", "Process.num_threads"),
    ("top/proc/procs_count", "count", "processes in the run's process tree", "Process.children"),
    ("top/proc/read_bytes_per_s", "B/s", "bytes read by the tree", "Process.io_counters"),
    ("top/proc/write_bytes_per_s", "B/s", "bytes written by the tree", "Process.io_counters"),
    ("top/proc/ctx_switches_per_s", "1/s", "context switches of the tree", "Process.num_ctx_switches"),
]


def _temperatures() -> dict[str, float]:
    """Host CPU temperature sensors (°C) where the host exposes them."""
    if not hasattr(psutil, "sensors_temperatures"):
        return {}
    try:
        sensors = psutil.sensors_temperatures()
    except Exception:
        return {}
    out: dict[str, float] = {}
    for chip, entries in sensors.items():
        for i, e in enumerate(entries):
            label = (e.label or f"{chip}{i}").replace(" ", "_").lower()
            key = f"top/temp/{''.join(c for c in label if c.isalnum() or c in '_-.')}_c"
            out[key] = e.current
    return out


class TopListener(Listener):
    name = "top"

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.tree = ProcessTree(config.pid)
        # pid -> (cpu seconds, io read bytes, io write bytes, context switches) at the last sample
        self._last: dict[int, tuple[float, float, float, float]] = {}
        self._last_t: float | None = None
        self._temps_t = 0.0
        self._temps_cache: dict[str, float] = {}

    def probe(self) -> list[MetricSpec]:
        self.ncpu = psutil.cpu_count() or 1
        specs = [
            MetricSpec("top/cpu_pct", "%", "system CPU utilisation, all cores", "psutil.cpu_percent"),
            *[MetricSpec(f"top/cpu{i}/util_pct", "%", f"utilisation of core {i}", "psutil.cpu_percent(percpu)")
              for i in range(self.ncpu)],
            MetricSpec("top/load1_count", "count", "1-minute load average", "os.getloadavg"),
            MetricSpec("top/mem_used_mib", "MiB", "host memory used", "psutil.virtual_memory"),
            MetricSpec("top/mem_used_pct", "%", "host memory used", "psutil.virtual_memory"),
            MetricSpec("top/swap_used_mib", "MiB", "swap used", "psutil.swap_memory"),
        ]
        self._temps = sorted(_temperatures())
        specs += [MetricSpec(k, "°C", "host temperature sensor", "psutil.sensors_temperatures")
                  for k in self._temps]
        if self.config.pid is not None:
            specs += [MetricSpec(*f) for f in _PROC_FIELDS]
            self._tree_sample()  # baseline for the first deltas
        psutil.cpu_percent(percpu=True)  # prime the counters: the first call returns 0
        return specs

    def sample(self) -> dict[str, float]:
        per_core = psutil.cpu_percent(percpu=True)
        vm = psutil.virtual_memory()
        out: dict[str, float] = {
            "top/cpu_pct": sum(per_core) / max(len(per_core), 1),
            "top/load1_count": os.getloadavg()[0],
            "top/mem_used_mib": (vm.total - vm.available) / 2**20,
            "top/mem_used_pct": vm.percent,
            "top/swap_used_mib": psutil.swap_memory().used / 2**20,
        }
        for i, v in enumerate(per_core):
            out[f"top/cpu{i}/util_pct"] = v
        if self._temps:
            now = time.monotonic()
            if now - self._temps_t >= 1.0:  # sensors refresh slowly; walking hwmon costs
                self._temps_cache = _temperatures()
                self._temps_t = now
            out.update({k: self._temps_cache[k] for k in self._temps if k in self._temps_cache})
        if self.config.pid is not None:
            out.update(self._tree_sample())
        return out

    def _tree_sample(self) -> dict[str, float]:
        """Tree totals; CPU, I/O and context-switch rates from per-process counter deltas, so
        a process that appeared since the last sample counts from its start, not as 0."""
        now = time.monotonic()
        rss = threads = 0.0
        d_cpu = d_rb = d_wb = d_ctx = 0.0
        current: dict[int, tuple[float, float, float, float]] = {}
        procs = self.tree.processes()
        for p in procs:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    cpu = t.user + t.system
                    rss += p.memory_info().rss
                    threads += p.num_threads()
                    c = p.num_ctx_switches()
                    ctx = float(c.voluntary + c.involuntary)
                    try:
                        io = p.io_counters()
                        rb, wb = float(io.read_bytes), float(io.write_bytes)
                    except (psutil.AccessDenied, AttributeError):
                        rb = wb = 0.0
            except psutil.Error:
                continue
            current[p.pid] = (cpu, rb, wb, ctx)
            prev = self._last.get(p.pid, (0.0, 0.0, 0.0, 0.0))
            d_cpu += max(cpu - prev[0], 0.0)
            d_rb += max(rb - prev[1], 0.0)
            d_wb += max(wb - prev[2], 0.0)
            d_ctx += max(ctx - prev[3], 0.0)
        out = {"top/proc/rss_mib": rss / 2**20, "top/proc/threads_count": threads,
               "top/proc/procs_count": float(len(procs))}
        if self._last_t is not None and now > self._last_t:
            dt = now - self._last_t
            out.update({"top/proc/cpu_pct": 100.0 * d_cpu / dt,
                        "top/proc/read_bytes_per_s": d_rb / dt,
                        "top/proc/write_bytes_per_s": d_wb / dt,
                        "top/proc/ctx_switches_per_s": d_ctx / dt})
        self._last = current
        self._last_t = now
        return out
