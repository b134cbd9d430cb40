"""top's host and process-tree readings: the /proc readers agree with psutil, the tree walk
finds what psutil finds (children forked from any thread), each reading comes at its own
pace, and the listener works through its real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

from radtrack.listeners import procfs
from radtrack.listeners.base import Every, ListenerConfig
from radtrack.listeners.proctree import ProcessTree
from radtrack.listeners.top import TopListener

pytestmark = pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")

BURN = "import time\nt = time.time()\nwhile time.time() - t < 30: pass\n"
SLEEP = "import time; time.sleep(30)"


@pytest.fixture
def tree_root():
    """A process with a child forked from its main thread and one forked from another
    thread, which itself has a child: 4 processes in all."""
    grandparent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {SLEEP!r}]); time.sleep(30)"
    code = ("import subprocess, sys, threading, time\n"
            f"a = subprocess.Popen([sys.executable, '-c', {SLEEP!r}])\n"
            "ev = threading.Event()\n"
            "def spawn():\n"  # a thread that forks and stays alive: its task/<tid>/children
            f"    b = subprocess.Popen([sys.executable, '-c', {grandparent!r}])\n"
            "    ev.set(); time.sleep(30)\n"
            "threading.Thread(target=spawn, daemon=True).start(); ev.wait()\n"
            "print('ready', flush=True); time.sleep(30)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    while len(psutil.Process(p.pid).children(recursive=True)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield p.pid
    for c in psutil.Process(p.pid).children(recursive=True):
        c.kill()
    p.kill()
    p.wait()


def test_proc_readers_agree_with_psutil():
    me = psutil.Process()
    cpu, threads, rss, _start = procfs.proc_stat(os.getpid())
    t = me.cpu_times()
    assert cpu == pytest.approx(t.user + t.system, abs=0.05)
    assert threads == me.num_threads()
    assert rss == pytest.approx(me.memory_info().rss, rel=0.05)
    c = me.num_ctx_switches()
    assert procfs.proc_ctx_switches(os.getpid()) == pytest.approx(c.voluntary + c.involuntary, abs=50)
    rb, wb = procfs.proc_io(os.getpid())
    io = me.io_counters()
    assert (rb, wb) == pytest.approx((io.read_bytes, io.write_bytes), abs=1 << 20)
    m = procfs.meminfo()
    vm = psutil.virtual_memory()
    assert m["MemTotal"] == vm.total
    assert m["MemAvailable"] == pytest.approx(vm.available, rel=0.05)
    total, avail, swap_total, swap_free = procfs.memory()  # top's reading: the lines it needs
    assert total == vm.total and avail == pytest.approx(vm.available, rel=0.05)
    sw = psutil.swap_memory()
    assert swap_total == sw.total and swap_free == pytest.approx(sw.free, rel=0.05, abs=1 << 20)
    times = procfs.cpu_times()
    assert len(times) == 1 + psutil.cpu_count()
    (total,) = procfs.cpu_times(cores=False)  # the all-CPU line alone, read the same way
    assert total[0] >= times[0][0] and total[0] - times[0][0] < 10 * psutil.cpu_count() * procfs.CLK_TCK
    total = psutil.cpu_times()
    assert times[0][0] / procfs.CLK_TCK == pytest.approx(
        sum(total) - getattr(total, "guest", 0) - getattr(total, "guest_nice", 0), rel=0.01)


def test_cpu_percents_of_a_busy_core():
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        before = procfs.cpu_times()
        time.sleep(1.0)
        pct = procfs.cpu_percents(before, procfs.cpu_times())
        # one process spinning: at least half a core's worth of the machine, per core <= 100
        assert pct[0] >= 100 / len(pct[1:]) * 0.5
        assert all(0 <= v <= 100 for v in pct) and max(pct[1:]) > 50
    finally:
        burner.kill()
        burner.wait()
    # no tick passed: no reading (NaN, dropped by the runner), not a fake 0
    assert all(v != v for v in procfs.cpu_percents(before, before))


def test_tree_walk_finds_children_of_every_thread(tree_root):
    expected = {tree_root, *(c.pid for c in psutil.Process(tree_root).children(recursive=True))}
    assert len(expected) == 4
    assert set(procfs.descendants(tree_root)) == expected
    tree = ProcessTree(tree_root)
    assert set(tree.pids()) == expected and tree.pids()[0] == tree_root
    fallback = ProcessTree(tree_root)
    fallback._use_proc = False  # a kernel without task/*/children: psutil walks it
    assert set(fallback.pids()) == expected


def test_tree_of_an_exited_root_is_empty():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert ProcessTree(p.pid).pids() == []
    assert ProcessTree(None).pids() == []


def test_every_gate_keeps_its_pace_under_jitter():
    gate = Every(1.0, 0.1)
    fired = [k for k in range(100) if gate.due(k * 0.1 + (0.004 if k % 2 else -0.004))]
    assert len(fired) == 10 and fired[:3] == [0, 10, 20]
    gate.force()
    assert gate.due(9.95)


def _top(pid: int | None, fast: bool) -> TopListener:
    lst = TopListener(ListenerConfig(interval=0.1, pid=pid))
    lst.fast = fast
    return lst


@pytest.mark.timing  # a spinning child must get most of a core
@pytest.mark.parametrize("fast", [True, False], ids=["proc", "psutil"])
def test_top_tree_cpu_of_a_busy_child_and_paces(fast):
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        top = _top(burner.pid, fast)
        now = [0.0]
        top.clock = lambda: now[0]
        keys = {s.key for s in top.probe()}
        assert {"top/cpu_pct", "top/cpu0/util_pct", "top/proc/cpu_pct", "top/proc/rss_mib"} <= keys
        counts: dict[str, int] = {}
        for k in range(1, 21):  # paces on the listener's clock, CPU burnt in real time
            time.sleep(0.1)
            now[0] = k * 0.1
            s = top.sample()
            assert set(s) <= keys
            for key in s:
                counts[key] = counts.get(key, 0) + 1
        # rates from the second sample on (the first is their baseline)
        assert counts["top/cpu_pct"] == counts["top/proc/cpu_pct"] == 19
        assert s["top/proc/cpu_pct"] > 50  # a spinning process
        assert counts["top/mem_used_mib"] == counts["top/proc/rss_mib"] == 20
        assert counts["top/swap_used_mib"] == 2  # once a second: at 0.1 s and 1.1 s
        assert counts["top/proc/ctx_switches_per_s"] == 1  # a rate over 0.1 s .. 1.1 s
        assert counts["top/load1_count"] == 1  # every 5 s (the first sample)
        assert s["top/proc/procs_count"] == 1 and s["top/proc/threads_count"] >= 1
    finally:
        burner.kill()
        burner.wait()
    # the final reading 1 ms after the last: no rate over a window too short for 10-ms
    # CPU ticks (it would read 0 or 1000 %); the process has exited: the tree is empty and
    # none of its series is read (a 0 there would be a false reading after the run's exit)
    now[0] += 0.001
    final = top.final_sample()
    assert "top/load1_count" in final and "top/swap_used_mib" in final
    assert not {k for k in final if k.startswith("top/proc/")}, final
    assert "top/cpu_pct" not in final
    now[0] += 0.1  # a whole interval later the host's rate is back, against the kept baseline
    assert "top/cpu_pct" in top.sample()


def test_top_reads_nothing_of_an_exited_or_zombie_tree():
    """A zombie (exited, not yet reaped) is not a live process: no RSS 0, no count of 1."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while procfs.available() and time.monotonic() < deadline:
        try:
            state = open(f"/proc/{child.pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state == b"Z":
            break
        time.sleep(0.01)
    try:
        for fast in (True, False):
            top = _top(child.pid, fast)
            top.probe()
            assert not {k for k in top.sample() if k.startswith("top/proc/")}
    finally:
        child.wait()


def test_top_paths_emit_the_same_keys():
    a, b = _top(os.getpid(), True), _top(os.getpid(), False)
    assert [s.key for s in a.probe()] == [s.key for s in b.probe()]
    for lst in (a, b):
        lst.sample()
    time.sleep(0.1)
    assert set(a.sample()) == set(b.sample())


def test_top_through_its_entry_point(tree_root):
    out = subprocess.run([sys.executable, "-m", "radtrack.listeners", "top", "--interval", "0.1",
                          "--count", "3", "--pid", str(tree_root)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "hello" and len(lines) == 4
    assert all(line["v"]["top/proc/procs_count"] == 4 for line in lines[1:])


def test_thread_forked_child_counts_in_the_tree_cpu():
    """A child forked from a non-main thread of the workload is part of its tree."""
    holder: dict[str, subprocess.Popen] = {}
    spawned, done = threading.Event(), threading.Event()

    def spawn() -> None:  # stays alive, so the child is listed under this thread's tid
        holder["p"] = subprocess.Popen([sys.executable, "-c", BURN])
        spawned.set()
        done.wait(30)
    t = threading.Thread(target=spawn)
    t.start()
    spawned.wait(10)
    try:
        main_only = procfs._read(f"/proc/{os.getpid()}/task/{os.getpid()}/children").split()
        assert str(holder["p"].pid).encode() not in main_only  # not the main thread's child
        assert holder["p"].pid in ProcessTree(os.getpid()).pids()
    finally:
        done.set()
        t.join()
        holder["p"].kill()
        holder["p"].wait()


def test_iostat_rates_span_at_least_half_an_interval():
    from radtrack.listeners.iostat import IostatListener

    io = IostatListener(ListenerConfig(interval=0.1))
    keys = {s.key for s in io.probe()}
    assert {"iostat/net/recv_bytes_per_s", "iostat/net/sent_bytes_per_s"} <= keys
    assert io.sample() == {}  # right after the probe: counts over ~0 ms are no rate
    time.sleep(0.1)
    s = io.sample()
    assert set(s) <= keys and s["iostat/net/recv_bytes_per_s"] >= 0
    assert io.final_sample() == {}  # again right after a sample
