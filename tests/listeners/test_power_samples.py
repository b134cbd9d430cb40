"""smi and the driver's power sample buffer (nvmlDeviceGetSamples), through autospec
doubles: every sample once, in order, with the driver's timestamp, across reads, a ring
that moves on between reads and a listener restart; polling where the buffer is absent."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
import textwrap

import pytest
from gpu_doubles import FakeGpu, FakeNvml
from support import HelloSink, listener_lines

import radtrack.listeners.smi as smi_module
from radtrack.listeners import nvml, runner
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.driver_samples import DriverSamples
from radtrack.listeners.smi import SmiListener
from radtrack.run.listen import ListenerProc

T0 = 1_795_323_300_000_000  # driver timestamps: CPU wall clock in us (Nov 2026)
KEY = "smi/gpu0/power_sample_w"


@pytest.fixture(autouse=True)
def _fresh_nvml():
    nvml.reset()
    yield
    nvml.reset()


def _h100_with_ring(before: int = 30) -> FakeGpu:
    gpu = FakeGpu()
    gpu.take_power_samples(before, T0, mw=[100_000, 200_000, 300_000])
    return gpu


def test_buffer_reads_each_new_sample_once_in_order(monkeypatch):
    gpu = _h100_with_ring()
    FakeNvml(monkeypatch, [gpu])
    buf = DriverSamples(gpu)
    assert buf.open()
    assert buf.read() == []  # what the ring held at open predates the listener
    taken = gpu.take_power_samples(50, T0 + 30 * 20_000, mw=[250_000, 260_000])
    got = buf.read()
    assert got == [(t, mw / 1000) for t, mw in taken]
    assert buf.read() == []  # nothing new: NVML's NOT_FOUND is no error
    more = gpu.take_power_samples(3, taken[-1][0] + 20_000)
    assert [t for t, _ in buf.read()] == [t for t, _ in more]


def test_buffer_resume_picks_up_after_the_last_emitted(monkeypatch):
    gpu = _h100_with_ring(100)
    FakeNvml(monkeypatch, [gpu])
    buf = DriverSamples(gpu)
    last_emitted = T0 + 79 * 20_000
    assert buf.open(resume_us=last_emitted)
    assert [t for t, _ in buf.read()] == [T0 + i * 20_000 for i in range(80, 100)]


def test_buffer_not_offered_is_a_state(monkeypatch):
    FakeNvml(monkeypatch, [FakeGpu()])  # power_ring None: NOT_SUPPORTED
    assert not DriverSamples(FakeGpu()).open()


def test_smi_emits_driver_samples_and_polls_power_once_a_second(monkeypatch):
    gpu = _h100_with_ring()
    FakeNvml(monkeypatch, [gpu])
    smi = SmiListener(ListenerConfig(interval=0.1))
    now = [1000.0]
    smi.clock = lambda: now[0]
    keys = {s.key for s in smi.probe()}
    assert KEY in keys and "smi/gpu0/power_w" in keys
    assert "power_sample_w" not in smi.tags()["radtrack.listener.smi.unsupported"]
    emitted, polled = [], 0
    start = T0 + 30 * 20_000
    taken = []
    for k in range(30):  # 3 s at 0.1 s; the driver takes 5 samples per 0.1 s
        taken += gpu.take_power_samples(5, start + k * 100_000)
        now[0] = 1000.0 + k * 0.1
        polled += "smi/gpu0/power_w" in smi.sample()
        emitted += smi.timed_samples()
    assert polled == 3  # instantaneous power only with the once-a-second readings
    assert len({id(x) for x in emitted}) == len(emitted)
    read_upto = [s for s in emitted if s.resume]
    assert len(read_upto) == 3  # three reads of the ring, each ends with its position
    assert [round(s.t * 1e6) for s in emitted] == [t for t, _ in taken if t <= read_upto[-1].resume[KEY]]
    assert [s.values[KEY] for s in emitted] == [mw / 1000 for t, mw in taken][:len(emitted)]
    # at stop, the final reading takes what is left
    taken += gpu.take_power_samples(7, start + 30 * 100_000)
    smi.final_sample()
    emitted += smi.timed_samples()
    assert [round(s.t * 1e6) for s in emitted] == [t for t, _ in taken]


def test_polling_stays_where_the_buffer_is_not_offered(monkeypatch):
    FakeNvml(monkeypatch, [FakeGpu()])
    smi = SmiListener(ListenerConfig(interval=0.1))
    keys = {s.key for s in smi.probe()}
    assert KEY not in keys
    assert "gpu0/power_sample_w" in smi.tags()["radtrack.listener.smi.unsupported"].split(",")
    assert all("smi/gpu0/power_w" in smi.sample() for _ in range(5))
    assert smi.timed_samples() == []


def _run(config: ListenerConfig, count: int) -> list[dict]:
    out = io.StringIO()
    assert runner.run("smi", config, out=out, count=count) == 0, out.getvalue()
    return listener_lines(out.getvalue())  # a columnar batch line as the samples it carries


def test_every_sample_once_across_a_restart(monkeypatch):
    """Two listener processes in a row (a crash, then the runner's restart with the
    position it last saw): together they emit every sample the driver took after the
    first start, once each, in order, with its driver timestamp as the line's time."""
    monkeypatch.setattr(smi_module, "READ_EVERY_S", 0.0)  # read the ring every sample
    gpu = _h100_with_ring()
    gpu.ring_tick = 5
    FakeNvml(monkeypatch, [gpu])
    first_new = gpu.power_ring[-1][0] + 20_000 * 6  # the probe's read takes 5 pre-start samples
    lines = _run(ListenerConfig(interval=0.01), 4)
    resume: dict[str, int] = {}
    for line in lines:
        resume.update(line.get("resume", {}))
    gpu.take_power_samples(40, gpu.power_ring[-1][0] + 20_000)  # while no listener runs
    lines += _run(ListenerConfig(interval=0.01, resume=resume), 3)
    stamps = [round(x["t"] * 1e6) for x in lines if KEY in x.get("v", {})]
    taken = [t for t, _ in gpu.power_ring]
    assert stamps == sorted(set(stamps))  # in order, none twice
    assert stamps[0] == first_new and stamps[-1] == taken[-1]
    assert stamps == list(range(first_new, taken[-1] + 1, 20_000))  # none missed
    assert all(set(x["v"]) == {KEY} for x in lines if KEY in x.get("v", {}))


def test_listener_proc_passes_the_last_position_to_a_restart(tmp_path):
    """The launcher keeps the newest position a listener wrote and hands it to the restart."""
    script = textwrap.dedent("""
        import json, sys
        print(json.dumps({"type": "hello", "listener": "x", "metrics": [],
                          "tags": {"argv": json.dumps(sys.argv[1:])}}), flush=True)
        print(json.dumps({"type": "sample", "t": 1.0, "v": {}, "resume": {"k/a": 5}}), flush=True)
        print(json.dumps({"type": "sample", "t": 2.0, "v": {}, "resume": {"k/a": 7, "k/b": 3}}),
              flush=True)
    """)

    sink = HelloSink()
    lp = ListenerProc("x", sink, 0.1, [], 1, tmp_path, {})  # type: ignore[arg-type]
    lp.launch = dataclasses.replace(lp.launch, runner=(sys.executable, "-c", script))
    lp.start()
    assert lp.proc is not None and lp.proc.wait(20) == 0
    lp.reader.join(10)  # type: ignore[union-attr]
    assert lp.resume == {"k/a": 7, "k/b": 3}
    lp.start()
    lp.proc.wait(20)
    lp.reader.join(10)  # type: ignore[union-attr]
    plain = ["x", "--interval", "0.1", "--devices", "", "--pid", "1", "--outdir", str(tmp_path)]
    assert json.loads(sink.hellos[0].tags["argv"]) == plain
    assert json.loads(sink.hellos[1].tags["argv"]) == [*plain, "--resume", json.dumps({"k/a": 7, "k/b": 3})]


def test_main_reads_the_resume_position(monkeypatch):
    seen: list[ListenerConfig] = []
    monkeypatch.setattr("radtrack.listeners.__main__.run",
                        lambda name, cfg, count=None: seen.append(cfg) or 0)
    from radtrack.listeners.__main__ import main

    assert main(["smi", "--resume", json.dumps({KEY: T0})]) == 0
    assert seen[0].resume == {KEY: T0}


def test_driver_timestamps_are_unix_time_in_the_spool(monkeypatch):
    """A sample line's time is the driver's, as unix seconds (not when it was read)."""
    gpu = _h100_with_ring()
    FakeNvml(monkeypatch, [gpu])
    smi = SmiListener(ListenerConfig(interval=0.1))
    smi.probe()
    gpu.take_power_samples(1, T0 + 10**6)
    smi.sample()
    (got,) = smi.timed_samples()
    assert got.t == pytest.approx((T0 + 10**6) / 1e6, abs=1e-6)

