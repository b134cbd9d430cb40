"""top: host CPU, memory, load and temperatures, and the run's process tree (/proc, psutil elsewhere)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

# psutil is imported where it is used, not here: the launcher imports this module (the
# listener's class) before its scripts start, and psutil's import takes ~15 ms
from radtrack.listeners import procfs
from radtrack.listeners.base import (
    HOST_SAMPLER,
    Every,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
    rate_window,
)
from radtrack.listeners.proctree import ProcessTree


def _series(pattern: str, unit: str, role: str, scope: str, label: str, unit_text: str = "",
            description: str = "", source: str = "") -> Series:
    return Series(f"top/{pattern}", unit, role, scope, label, unit_text, description, source)


# every key top emits, with what it is (docs/metrics.md is checked against it); the host's
# CPU is a share of all its cores, the run's a sum over its processes of one core each
SERIES = (
    _series("cpu_pct", "%", "host_cpu", "host", "host CPU", "% of all cores",
            "system CPU utilisation, all cores"),
    _series("cpu<n>/util_pct", "%", "host_cpu", "host", "host core <n> CPU", "% of one core",
            "utilisation of one core"),
    _series("load1_count", "count", "other", "host", "host load average, 1 min", "runnable processes",
            "1-minute load average (every 5 s)", "os.getloadavg"),
    _series("mem_used_mib", "MiB", "memory", "host", "host memory used", "MiB",
            "host memory used (total - available)"),
    _series("mem_used_pct", "%", "memory", "host", "host memory used", "% of host memory",
            "host memory used"),
    _series("swap_used_mib", "MiB", "memory", "host", "host swap used", "MiB", "swap used (every 1 s)"),
    _series("temp/<sensor>_c", "°C", "temperature", "host", "host temperature <sensor>", "°C",
            "host temperature sensor (every 1 s)", "psutil.sensors_temperatures"),
    _series("proc/cpu_pct", "%", "proc_cpu", "run", "run CPU", "% of one core",
            "CPU of the run's process tree (100 = one core)", "/proc/<pid>/stat utime+stime"),
    _series("proc/rss_mib", "MiB", "memory", "run", "run memory (RSS)", "MiB",
            "resident memory of the run's process tree", "/proc/<pid>/stat rss"),
    _series("proc/threads_count", "count", "other", "run", "run threads", "threads",
            "threads in the run's process tree", "/proc/<pid>/stat num_threads"),
    _series("proc/procs_count", "count", "other", "run", "run processes", "processes",
            "processes in the run's process tree", "/proc/<pid>/task/*/children"),
    _series("proc/read_bytes_per_s", "B/s", "io", "run", "run disk reads", "B/s",
            "bytes read by the tree, over 1 s", "/proc/<pid>/io read_bytes"),
    _series("proc/write_bytes_per_s", "B/s", "io", "run", "run disk writes", "B/s",
            "bytes written by the tree, over 1 s", "/proc/<pid>/io write_bytes"),
    _series("proc/ctx_switches_per_s", "1/s", "other", "run", "run context switches", "1/s",
            "context switches of the tree, over 1 s", "/proc/<pid>/status"),
)
_PROC_FIELDS = [s for s in SERIES if s.pattern.startswith("top/proc/")]


def _spec(key: str, description: str | None = None, source: str | None = None) -> MetricSpec:
    """The spec of one key, from the first of :data:`SERIES` it belongs to."""
    return next(s for s in SERIES if s.match(key) is not None).spec(key, description, source)
SLOW_EVERY_S = 1.0  # swap, temperatures, the tree's I/O and context switches
LOAD_EVERY_S = 5.0  # the kernel recomputes the load average every 5 s
# Per-core CPU at its own pace: a 128-core host at 0.1 s would log 1,280 points a second
# before any GPU. The totals follow the interval; RADTRACK_TOP_CORE_EVERY_S sets the
# per-core pace (0: every interval, like the totals).
CORE_EVERY_S = 1.0
CORE_EVERY_ENV = "RADTRACK_TOP_CORE_EVERY_S"


def core_every_s(environ: dict[str, str] | None = None) -> float:
    """The per-core pace in seconds: CORE_EVERY_S unless the environment sets one."""
    raw = (os.environ if environ is None else environ).get(CORE_EVERY_ENV, "").strip()
    if not raw:
        return CORE_EVERY_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{CORE_EVERY_ENV}={raw!r}: give seconds >= 0 (0: every interval)")
    return value


def _psutil_cpu_times() -> list[tuple[float, float]]:
    """(total, busy) seconds for all CPUs (first) and each core, where /proc is absent."""
    import psutil
    cores = []
    for t in psutil.cpu_times(percpu=True):
        total = sum(t)
        cores.append((total, total - t.idle - getattr(t, "iowait", 0.0)))
    return [(sum(c[0] for c in cores), sum(c[1] for c in cores)), *cores]


def _temperatures() -> dict[str, float]:
    """Host CPU temperature sensors (°C) where the host exposes them."""
    import psutil
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
    """Host CPU (all cores) and memory every interval; per-core CPU, swap, temperatures and
    the tree's I/O and context switches once a second (per-core: see CORE_EVERY_S); the load average every 5 s (the
    kernel's own period). Linux readings come straight from /proc (radtrack/listeners/procfs.py),
    psutil elsewhere."""

    name = "top"
    series = SERIES

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        return HOST_SAMPLER  # /proc reads share the wake-ups of smi's or iostat's sampler

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.tree = ProcessTree(config.pid)
        self.fast = procfs.available()
        self._slow = Every(SLOW_EVERY_S, config.interval)
        self._load = Every(LOAD_EVERY_S, config.interval)
        self.core_every_s = core_every_s()
        self._cores = Every(self.core_every_s, config.interval)
        self._cpu_prev: tuple[float, float] | None = None  # all cores, at the last total
        self._cpu_t: float | None = None  # clock of the last total CPU reading
        self._core_prev: list[tuple[float, float]] = []  # each core, at the last per-core
        self._core_t: float | None = None
        # (pid, start) -> CPU seconds at the last sample; -> (read, written, ctx) at the last slow one
        self._last_cpu: dict[tuple[int, float], float] = {}
        self._last_slow: dict[tuple[int, float], tuple[float, float, float]] = {}
        self._last_t: float | None = None
        self._last_slow_t: float | None = None
        self.clock = time.monotonic  # replaceable in tests

    def probe(self) -> list[MetricSpec]:
        import psutil
        self.ncpu = len(procfs.cpu_times()) - 1 if self.fast else (psutil.cpu_count() or 1)
        src = "/proc/stat" if self.fast else "psutil.cpu_times"
        mem = "/proc/meminfo" if self.fast else "psutil.virtual_memory"
        cores = f"every {max(self.core_every_s, self.config.interval):g} s"
        specs = [
            _spec("top/cpu_pct", source=src),
            *[_spec(f"top/cpu{i}/util_pct", f"utilisation of core {i} ({cores})", src)
              for i in range(self.ncpu)],
            _spec("top/load1_count"),
            _spec("top/mem_used_mib", source=mem),
            _spec("top/mem_used_pct", source=mem),
            _spec("top/swap_used_mib", source=mem if self.fast else "psutil.swap_memory"),
        ]
        self._temps = sorted(_temperatures())
        specs += [_spec(k) for k in self._temps]
        if self.config.pid is not None:
            specs += [s.spec(s.pattern) for s in _PROC_FIELDS]
        # Rates (CPU %, I/O, context switches) need a previous reading; the first sample
        # takes it and reports none, so every rate spans a whole interval: a window of a
        # few ms right after the probe would turn 10-ms CPU ticks into 0 or 1000 %.
        return specs

    # -- host -------------------------------------------------------------------------
    def _cpu_percents(self, now: float) -> dict[str, float]:
        """Utilisation % since the previous reading: all cores every interval, each core
        at its own pace. A first reading only takes the baseline; a too-short window
        (rate_window) reports nothing and keeps the earlier baseline."""
        interval = self.config.interval
        cores = self._cores.due(now) and (self._core_t is None or rate_window(self._core_t, now, interval))
        # the per-core lines are parsed only when they are due (once a second by default)
        cur = procfs.cpu_times(cores) if self.fast else _psutil_cpu_times()
        out: dict[str, float] = {}
        if self._cpu_t is None or rate_window(self._cpu_t, now, interval):
            if self._cpu_prev is not None:
                out["top/cpu_pct"] = procfs.cpu_percents([self._cpu_prev], cur[:1])[0]
            self._cpu_prev, self._cpu_t = cur[0], now
        if cores:
            if self._core_prev:
                for i, v in enumerate(procfs.cpu_percents(self._core_prev, cur[1:])):
                    out[f"top/cpu{i}/util_pct"] = v
            self._core_prev, self._core_t = cur[1:], now
        return out

    def _memory(self) -> tuple[float, float, float, float]:
        """(total, available, swap total, swap free) bytes."""
        if self.fast:
            return procfs.memory()
        import psutil  # the fallback only: not on /proc's every-interval path
        vm, sw = psutil.virtual_memory(), psutil.swap_memory()
        return vm.total, vm.available, sw.total, sw.free

    def sample(self) -> dict[str, float]:
        now = self.clock()
        slow = self._slow.due(now)
        cpu = self._cpu_percents(now)
        total, avail, swap_total, swap_free = self._memory()
        out: dict[str, float] = {
            "top/mem_used_mib": (total - avail) / 2**20,
            "top/mem_used_pct": 100.0 * (total - avail) / total if total else 0.0,
        }
        out.update(cpu)
        if self._load.due(now):
            out["top/load1_count"] = os.getloadavg()[0]
        if slow:
            out["top/swap_used_mib"] = (swap_total - swap_free) / 2**20
            if self._temps:  # walking hwmon costs: once a second, as the sensors refresh
                temps = _temperatures()
                out.update({k: temps[k] for k in self._temps if k in temps})
        if self.config.pid is not None:
            out.update(self._tree_sample(now, slow))
        return out

    def final_sample(self) -> dict[str, float]:
        self._slow.force()
        self._load.force()
        self._cores.force()
        self.tree.forget()
        return self.sample()

    # -- the run's process tree ---------------------------------------------------------
    def _proc(self, pid: int) -> tuple[float, float, float, float]:
        """(CPU seconds, threads, RSS bytes, start time) of one process."""
        if self.fast:
            return procfs.proc_stat(pid)
        import psutil
        p = psutil.Process(pid)
        with p.oneshot():
            if p.status() == psutil.STATUS_ZOMBIE:  # exited, not yet reaped: its readings are gone
                raise psutil.NoSuchProcess(pid)
            t = p.cpu_times()
            return t.user + t.system, float(p.num_threads()), float(p.memory_info().rss), p.create_time()

    def _proc_slow(self, pid: int) -> tuple[float, float, float]:
        """(bytes read, bytes written, context switches) of one process."""
        import psutil
        if self.fast:
            ctx = procfs.proc_ctx_switches(pid)
            try:
                rb, wb = procfs.proc_io(pid)
            except PermissionError:
                rb = wb = 0.0
            return rb, wb, ctx
        p = psutil.Process(pid)
        c = p.num_ctx_switches()
        try:
            io = p.io_counters()
            rb, wb = float(io.read_bytes), float(io.write_bytes)
        except (psutil.AccessDenied, AttributeError):
            rb = wb = 0.0
        return rb, wb, float(c.voluntary + c.involuntary)

    def _tree_sample(self, now: float, slow: bool) -> dict[str, float]:
        """Tree totals; rates from per-process counter deltas, so a process that appeared
        since the last sample counts from its start, not as 0, and an exited one drops out.
        With no live process in the tree (the run has ended: the final reading as the
        listener stops) nothing of the tree is read: a 0 there would be a reading after the
        run's exit, and the run's span would end interpolated toward it (issue 52). The
        series end with the tree's last real reading; the rates keep their baselines."""
        import psutil
        rss = threads = d_cpu = 0.0
        d_slow = [0.0, 0.0, 0.0]
        cpu_now: dict[tuple[int, float], float] = {}
        slow_now: dict[tuple[int, float], tuple[float, float, float]] = {}
        pids = self.tree.pids()
        for pid in pids:
            try:
                cpu, n_threads, rss_b, start = self._proc(pid)
                counters = self._proc_slow(pid) if slow else None
            except (OSError, psutil.Error):
                continue  # exited since the tree was scanned
            key = (pid, start)
            rss += rss_b
            threads += n_threads
            cpu_now[key] = cpu
            d_cpu += max(cpu - self._last_cpu.get(key, 0.0), 0.0)
            if counters is not None:
                slow_now[key] = counters
                prev = self._last_slow.get(key, (0.0, 0.0, 0.0))
                for i in range(3):
                    d_slow[i] += max(counters[i] - prev[i], 0.0)
        if not cpu_now:
            return {}
        out = {"top/proc/rss_mib": rss / 2**20, "top/proc/threads_count": threads,
               "top/proc/procs_count": float(len(cpu_now))}
        interval = self.config.interval
        if self._last_t is None or rate_window(self._last_t, now, interval):
            if self._last_t is not None:
                out["top/proc/cpu_pct"] = 100.0 * d_cpu / (now - self._last_t)
            self._last_cpu, self._last_t = cpu_now, now
        if slow and (self._last_slow_t is None or rate_window(self._last_slow_t, now, interval)):
            if self._last_slow_t is not None:
                dt = now - self._last_slow_t
                out.update({"top/proc/read_bytes_per_s": d_slow[0] / dt,
                            "top/proc/write_bytes_per_s": d_slow[1] / dt,
                            "top/proc/ctx_switches_per_s": d_slow[2] / dt})
            self._last_slow, self._last_slow_t = slow_now, now
        return out
