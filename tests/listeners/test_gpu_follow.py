"""smi follows a GPU outside the row's own once a process of the run's tree holds a context
there (radtrack/listeners/gpu_follow.py), on the NVML doubles (tests/gpu_doubles.py): two GPUs, the
listener watching GPU 0 only. Through the CLI into a real store: test_gpu_follow_e2e.py."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from gpu_doubles import MIB, FakeGpu, FakeNvml

from radtrack.device_entries import SHARED_GPUS_ENV
from radtrack.listeners import gpu_follow, nvml, runner
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.devices import ALL_GPUS_ENV
from radtrack.listeners.gpu_follow import FOLLOW_ENV, FOLLOW_EVERY_S
from radtrack.listeners.smi import SmiListener

CONTEXTS = "nvmlDeviceGetComputeRunningProcesses"
TAG = "radtrack.listener.smi.gpu1"


@pytest.fixture(autouse=True)
def _fresh_nvml(monkeypatch):
    for name in (SHARED_GPUS_ENV, ALL_GPUS_ENV, FOLLOW_ENV, "CUDA_VISIBLE_DEVICES",
                 "CUDA_MPS_PIPE_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    nvml.reset()
    yield
    nvml.reset()


@pytest.fixture
def child():
    """A real process of this test's tree (the run's workload, for the listener)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _gpus(n: int = 2) -> list[FakeGpu]:
    return [FakeGpu(uuid=f"GPU-{i:08d}-0000-0000-0000-000000000000") for i in range(n)]


def _smi(interval: float = 0.1, **config) -> SmiListener:
    smi = SmiListener(ListenerConfig(interval=interval, devices=["0"], pid=os.getpid(), **config))
    smi.clock = lambda: 999.9
    return smi


def _run(smi: SmiListener, seconds: float, start: float, interval: float = 0.1) -> list[dict]:
    now = [start]
    smi.clock = lambda: now[0]
    out = []
    for k in range(round(seconds / interval)):
        now[0] = start + k * interval
        out.append(smi.sample())
    return out


def test_a_tree_process_on_an_unwatched_gpu_is_followed_from_then_on(monkeypatch, child):
    """GPU 1 holds a process outside the tree: looked at every 5 s (one contexts' list per
    look, nothing else asked of it), never followed. A process of the tree arrives there:
    from the next look on GPU 1 is watched as ``gpu1`` with every reading of a watched GPU,
    its tags, a new hello's worth of metrics, and the positions a restart keeps it by."""
    gpus = _gpus()
    fake = FakeNvml(monkeypatch, gpus)
    other = os.getppid()  # a live process outside the test's tree
    gpus[1].procs = [(other, 700 * MIB)]
    smi = _smi()
    first = {s.key for s in smi.probe()}
    assert {k.split("/")[1] for k in first} == {"gpu0"}
    assert smi.grown() is None
    fake.reset_counts()
    quiet = _run(smi, 10.0, 1000.0)
    assert all(not k.startswith("smi/gpu1/") for s in quiet for k in s)
    assert smi.grown() is None and f"{TAG}.uuid" not in smi.tags()
    # the pace: one look every FOLLOW_EVERY_S, and a look is only the contexts' list
    assert fake.count(CONTEXTS, gpus[1]) == round(10.0 / FOLLOW_EVERY_S)
    assert set(fake.counts(gpus[1])) == {CONTEXTS}

    gpus[1].procs.append((child, 300 * MIB))
    gpus[1].util = (55, 10)
    t_arrived = time.time()
    later = _run(smi, 6.0, 1010.0)
    grown = smi.grown()
    assert grown is not None, "GPU 1 was not followed"
    keys = {s.key for s in grown}
    assert first < keys and {"smi/gpu1/power_w", "smi/gpu1/energy_j", "smi/gpu1/gpu_util_pct",
                             "smi/gpu1/proc_mem_used_mib"} <= keys
    assert smi.grown() is None  # said once
    tags = smi.tags()
    assert tags[f"{TAG}.uuid"] == gpus[1].uuid and tags[f"{TAG}.nvml_index"] == "1"
    assert tags[f"{TAG}.energy_from"] == "followed"
    followed = float(tags[f"{TAG}.followed"])
    assert t_arrived - 1 <= followed <= time.time()
    seen = [s for s in later if "smi/gpu1/power_w" in s]
    assert seen and seen[0]["smi/gpu1/gpu_util_pct"] == 55
    assert any(s.get("smi/gpu1/proc_mem_used_mib") == 300 for s in later)
    # the first reading, stamped at the look that found it, with the restart positions
    timed = [ts for ts in smi.timed_samples() if ts.resume]
    assert len(timed) == 1 and timed[0].t == followed
    assert timed[0].values["smi/gpu1/energy_j"] == 0.0
    assert timed[0].resume == {"smi/gpu1/followed_nvml_index": 1,
                               "smi/gpu1/followed_us": round(followed * 1e6)}

    # a restart follows it again under the same scope and time, the tree gone from it
    gpus[1].procs = [(other, 700 * MIB)]
    again = _smi(resume=timed[0].resume)
    keys_again = {s.key for s in again.probe()}
    assert {"smi/gpu1/power_w", "smi/gpu1/energy_j"} <= keys_again
    assert again.tags()[f"{TAG}.followed"] == tags[f"{TAG}.followed"]
    assert again.tags()[f"{TAG}.uuid"] == gpus[1].uuid


def test_scopes_stay_free_and_following_can_be_turned_off(monkeypatch, child):
    """A tree on GPUs 2 and 3 of four at the probe: followed at once, as gpu1 and gpu2 after
    the run's gpu0 (never the NVML index, which could be the run's own scope); a restart
    that follows gpu2 keeps it there and gives the next one gpu3. Neither without the tree,
    with RADTRACK_FOLLOW_GPUS=0, nor in the host-wide view is another GPU looked at."""
    gpus = _gpus(4)
    fake = FakeNvml(monkeypatch, gpus)
    gpus[2].procs = gpus[3].procs = [(child, 100 * MIB)]
    smi = _smi()
    keys = {s.key for s in smi.probe()}
    assert {k.split("/")[1] for k in keys} == {"gpu0", "gpu1", "gpu2"}
    tags = smi.tags()
    assert [tags[f"radtrack.listener.smi.gpu{i}.nvml_index"] for i in range(3)] == ["0", "2", "3"]
    restarted = _smi(resume=gpu_follow.positions("smi", "gpu2", 2, 1_700_000_000.0))
    restarted.probe()
    tags = restarted.tags()
    assert tags["radtrack.listener.smi.gpu2.nvml_index"] == "2"
    assert tags["radtrack.listener.smi.gpu2.followed"] == "1700000000.000"
    assert tags["radtrack.listener.smi.gpu3.nvml_index"] == "3"
    assert "radtrack.listener.smi.gpu1.uuid" not in tags

    for how in ("no tree", "opted out", "host-wide"):
        fake.reset_counts()
        if how == "opted out":
            monkeypatch.setenv(FOLLOW_ENV, "0")
        if how == "host-wide":
            monkeypatch.delenv(FOLLOW_ENV)
            monkeypatch.setenv(ALL_GPUS_ENV, "1")
        smi = SmiListener(ListenerConfig(interval=0.1, devices=["0"],
                                         pid=None if how == "no tree" else os.getpid()))
        scopes = {s.key.split("/")[1] for s in smi.probe()}
        _run(smi, 6.0, 1000.0)
        assert smi.grown() is None, how
        if how == "host-wide":  # every GPU watched already, by NVML index
            assert scopes == {"gpu0", "gpu1", "gpu2", "gpu3"}
            assert "radtrack.listener.smi.gpu2.followed" not in smi.tags()
        else:
            assert scopes == {"gpu0"}, how
            assert not fake.counts(gpus[2]) and not fake.counts(gpus[3]), how


def test_the_runner_says_hello_again_when_smi_follows_a_gpu(monkeypatch, child):
    """Through the runner: the first hello declares GPU 0's metrics; once the tree arrives
    on GPU 1 a second hello declares GPU 0's and GPU 1's, with GPU 1's tags, before any
    line carries a GPU 1 reading, and the restart positions ride on a sample line."""
    gpus = _gpus()
    FakeNvml(monkeypatch, gpus)
    monkeypatch.setattr(gpu_follow, "FOLLOW_EVERY_S", 0.2)
    monkeypatch.setattr(runner, "get", lambda name: SmiListener)
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    arrive = threading.Timer(0.3, lambda: gpus[1].procs.append((child, 300 * MIB)))
    arrive.start()
    out = io.StringIO()
    try:
        assert runner.run("smi", ListenerConfig(interval=0.05, devices=["0"], pid=os.getpid()),
                          out=out, count=20) == 0
    finally:
        arrive.cancel()
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    hellos = [i for i, x in enumerate(lines) if x["type"] == "hello"]
    assert len(hellos) == 2 and hellos[0] == 0, [x["type"] for x in lines]
    first, second = lines[hellos[0]], lines[hellos[1]]
    assert {m["key"].split("/")[1] for m in first["metrics"]} == {"gpu0"}
    assert {m["key"].split("/")[1] for m in second["metrics"]} == {"gpu0", "gpu1"}
    assert second["tags"][f"{TAG}.uuid"] == gpus[1].uuid and f"{TAG}.followed" in second["tags"]
    gpu1_at = [i for i, x in enumerate(lines)
               if any(k.startswith("smi/gpu1/") for k in x.get("v", {}))]
    assert gpu1_at and min(gpu1_at) > hellos[1]
    resumes = [x["resume"] for x in lines if "resume" in x]
    assert any(r.get("smi/gpu1/followed_nvml_index") == 1 for r in resumes)


def test_the_last_hello_holds_along_the_spool_path(tmp_path):
    """A spooled smi stream with a second hello (GPU 1 followed at t=105 in a run spanning
    100..110): the launcher's stream, a killed launcher's recovery and ``radtrack sync``'s
    reading of the folder all keep the second; the followed GPU's series start at the
    follow, with no point held back to the run's start, while GPU 0's cover the span."""
    from radtrack.listeners.protocol import Hello, Sample, encode, late_keys
    from radtrack.postrun.synced import read_sink
    from radtrack.store import runfiles
    from radtrack.store.recovery import reopen_streams
    from radtrack.store.spool import Spool

    def metrics(*scopes: str) -> list[dict]:
        return [{"key": f"smi/{s}/{q}", "unit": u} for s in scopes
                for q, u in (("power_w", "W"), ("energy_j", "J"))]

    first = Hello("smi", metrics("gpu0"), {"radtrack.listener.smi.gpu0.uuid": "GPU-0"}, 0.5)
    second = Hello("smi", metrics("gpu0", "gpu1"), {**first.tags, f"{TAG}.uuid": "GPU-1",
                                                    f"{TAG}.followed": "105.000"}, 0.5)
    lines = [first, Sample(101.0, {"smi/gpu0/power_w": 300.0, "smi/gpu0/energy_j": 0.0}),
             second, Sample(105.0, {"smi/gpu1/power_w": 400.0, "smi/gpu1/energy_j": 0.0}),
             Sample(109.0, {"smi/gpu0/power_w": 300.0, "smi/gpu0/energy_j": 2400.0,
                            "smi/gpu1/power_w": 400.0, "smi/gpu1/energy_j": 1600.0})]
    spool = Spool(tmp_path)
    for msg in lines:
        spool.append("smi", encode(msg))
    spool.close_files()
    assert spool.hello("smi") == second
    assert late_keys(second) == {"smi/gpu1/power_w": 105.0, "smi/gpu1/energy_j": 105.0}
    assert late_keys(first) == {}
    assert reopen_streams(tmp_path)["smi"].hello == second
    runfiles.write(tmp_path, runfiles.FINISH_FILE, {"start": 100.0, "end": 110.0})
    sink = read_sink(tmp_path)
    assert sink.hello("smi") == second
    frame = sink.frames["smi"]
    gpu0 = frame.dropna(subset=["smi/gpu0/power_w"])
    gpu1 = frame.dropna(subset=["smi/gpu1/power_w"])
    assert gpu0["time"].min() == 100.0 and gpu0["time"].max() == 110.0
    assert gpu1["time"].min() == 105.0 and gpu1["time"].max() == 110.0


def test_a_gpu_that_fails_as_it_is_followed_leaves_the_runs_own_readings(monkeypatch, child):
    """GPU 1, where the tree arrives, is lost as smi opens it: GPU 0 is read on, the next
    hello says why GPU 1 is not followed, and GPU 1 is not looked at again."""
    import pynvml

    from radtrack.listeners import smi as smi_module

    gpus = _gpus()
    fake = FakeNvml(monkeypatch, gpus)
    gpus[1].procs = [(child, 300 * MIB)]

    def lost(index: int, scope: str):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    monkeypatch.setattr(smi_module, "gpu_at", lost)
    smi = _smi()
    keys = {s.key for s in smi.probe()}
    assert {k.split("/")[1] for k in keys} == {"gpu0"}
    assert "NVML GPU 1: NVMLError" in smi.tags()["radtrack.listener.smi.follow_failed"]
    fake.reset_counts()
    samples = _run(smi, 6.0, 1000.0)
    assert all("smi/gpu0/power_w" in s for s in samples)
    assert not fake.counts(gpus[1])


def test_a_followed_gpu_counts_in_accounting_and_code_windows_from_its_follow():
    """A run on GPU 0 from t=100 whose smi followed GPU 1 at t=105: co-location accounting
    takes GPU 1 as the run's from 105, and a code window before then has GPU 0's energy
    alone (not an unknown), one across it GPU 1's part from 105."""
    import numpy as np
    import pandas as pd

    from radtrack.compute.gpu_uses import run_uses
    from radtrack.postrun.window_energy import window_table

    t = np.arange(100.0, 111.0)
    late = t >= 105
    frames = {"smi": pd.DataFrame({
        "time": t, "step": np.arange(len(t)),
        "smi/gpu0/power_w": 300.0, "smi/gpu0/energy_j": 300.0 * (t - 100),
        "smi/gpu1/power_w": np.where(late, 400.0, np.nan),
        "smi/gpu1/energy_j": np.where(late, 400.0 * (t - 105), np.nan)})}
    tags = {"radtrack.listener.smi.gpu0.uuid": "GPU-0", f"{TAG}.uuid": "GPU-1", f"{TAG}.followed": "105.000"}
    uses = run_uses("r", frames, tags, "-", 100.0, 110.0)
    assert uses["gpu0"].start == 100.0 and uses["gpu1"].start == 105.0
    table = window_table([{"name": "before", "start": 101.0, "end": 104.0},
                          {"name": "across", "start": 103.0, "end": 107.0}], "r", uses, frames, {})
    got = dict(zip(table["name"], table["gpu_energy_j"], strict=True))
    assert got["before"] == pytest.approx(900.0) and got["across"] == pytest.approx(2000.0)
