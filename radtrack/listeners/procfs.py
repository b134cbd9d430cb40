"""Host and process readings straight from Linux /proc, for the 10 Hz samplers.

psutil is the portable way, but each of its calls parses more than a sampler needs: on the
16-core H100 host ``psutil.cpu_percent(percpu=True)`` costs 376 us of CPU, virtual plus
swap memory 443 us and ``Process.children(recursive=True)`` 3.5 ms (it reads the parent
of every process on the host), against 95 us to read /proc/stat and 66 us for
/proc/meminfo (benchmarks/listener_costs.py). These readers take the same numbers from
the same files psutil reads, once per sample. Every function raises OSError when the
file is not there (not Linux, a process that exited); callers fall back to psutil.
"""

from __future__ import annotations

import os
import re

PROC = "/proc"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def available() -> bool:
    """Whether this host has the /proc files these readers need."""
    return all(os.path.exists(f"{PROC}/{f}") for f in ("stat", "meminfo", "self/stat", "self/io"))


def _read(path: str) -> bytes:
    with open(path, "rb", buffering=0) as f:
        return f.read()


def cpu_times(cores: bool = True) -> list[tuple[float, float]]:
    """(total, busy) clock ticks for all CPUs (first) and each core, as psutil counts them:
    guest time is already inside user/nice, idle and iowait are not busy. ``cores=False``:
    the all-CPU entry alone (parsing a 16-core host's per-core lines cost 165 us a call on
    the H100 host; top needs them once a second, its totals every interval)."""
    data = _read(f"{PROC}/stat")
    if not cores:
        return [_cpu_line(data[:data.index(b"\n")])]
    out = []
    for line in data.split(b"\n"):
        if not line.startswith(b"cpu"):
            if out:
                break
            continue
        out.append(_cpu_line(line))
    return out


def _cpu_line(line: bytes) -> tuple[float, float]:
    v = [int(x) for x in line.split()[1:9]]
    total = sum(v)  # user nice system idle iowait irq softirq steal
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return float(total), float(total - idle)


def cpu_percents(prev: list[tuple[float, float]], cur: list[tuple[float, float]]) -> list[float]:
    """Utilisation % per entry between two :func:`cpu_times` readings; NaN (no reading, which
    the runner drops) when no clock tick passed, rather than a made-up 0."""
    out = []
    for (t0, b0), (t1, b1) in zip(prev, cur, strict=False):
        dt = t1 - t0
        out.append(min(max(100.0 * (b1 - b0) / dt, 0.0), 100.0) if dt > 0 else float("nan"))
    return out


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (MemTotal, MemAvailable, SwapTotal, SwapFree, ...)."""
    out = {}
    for line in _read(f"{PROC}/meminfo").split(b"\n"):
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0].rstrip(b":").decode()] = int(parts[1]) * (1024 if len(parts) > 2 else 1)
    return out


_MEM_RE = re.compile(rb"^(MemTotal|MemFree|MemAvailable|Cached|SwapTotal|SwapFree):\s+(\d+)", re.M)


def memory() -> tuple[float, float, float, float]:
    """(total, available, swap total, swap free) bytes from /proc/meminfo, as psutil
    counts them (MemAvailable, else MemFree + Cached): only the lines top needs (one regex
    over the file, 22 us against 34 us for :func:`meminfo` on the 2-core VM)."""
    m = {k: int(v) * 1024 for k, v in _MEM_RE.findall(_read(f"{PROC}/meminfo"))}
    avail = m.get(b"MemAvailable", m.get(b"MemFree", 0) + m.get(b"Cached", 0))
    return float(m[b"MemTotal"]), float(avail), float(m.get(b"SwapTotal", 0)), float(m.get(b"SwapFree", 0))


_PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit()


def proc_stat(pid: int) -> tuple[float, float, float, float]:
    """(CPU seconds user+system, threads, RSS bytes, start time in ticks) of one process."""
    data = _read(f"{PROC}/{pid}/stat")
    f = data[data.rindex(b")") + 2:].split()  # the command name may hold spaces and ')'
    # after the name: state(0) ppid(1) ... utime(11) stime(12) ... num_threads(17) ... starttime(19) vsize(20) rss(21)
    # exited, not yet reaped (Z, X), or exiting (flags(6) & PF_EXITING: its memory is already
    # released, a reading would be an RSS of 0 taken as the run ends): its readings are gone
    if f[0] in (b"Z", b"X") or int(f[6]) & _PF_EXITING:
        raise ProcessLookupError(pid)
    return ((int(f[11]) + int(f[12])) / CLK_TCK, float(f[17]), float(int(f[21]) * PAGE), float(f[19]))


def proc_ctx_switches(pid: int) -> float:
    """Voluntary + involuntary context switches of one process."""
    n = 0
    for line in _read(f"{PROC}/{pid}/status").split(b"\n"):
        if line.startswith((b"voluntary_ctxt_switches", b"nonvoluntary_ctxt_switches")):
            n += int(line.split()[1])
    return float(n)


def proc_io(pid: int) -> tuple[float, float]:
    """(read_bytes, write_bytes) of one process (PermissionError for another user's)."""
    rb = wb = 0
    for line in _read(f"{PROC}/{pid}/io").split(b"\n"):
        if line.startswith(b"read_bytes:"):
            rb = int(line.split()[1])
        elif line.startswith(b"write_bytes:"):
            wb = int(line.split()[1])
    return float(rb), float(wb)


def children(pid: int) -> list[int]:
    """Direct children of ``pid``: the union over its threads' ``task/<tid>/children``
    (a thread, not only the main one, can fork). OSError when the kernel lacks the file."""
    kids: list[int] = []
    for tid in os.listdir(f"{PROC}/{pid}/task"):
        try:
            kids += [int(x) for x in _read(f"{PROC}/{pid}/task/{tid}/children").split()]
        except FileNotFoundError:
            if tid == str(pid):
                raise
            # a thread that ended since listdir
    return kids


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (breadth first)."""
    out, todo = [pid], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = children(p)
        except FileNotFoundError:
            if p == pid:
                raise
            continue  # exited during the walk
        out += kids
        todo += kids
    return out
