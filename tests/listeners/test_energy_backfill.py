"""smi's energy from the run's start (radtrack/listeners/energy_backfill.py): a listener that starts
after its script recovers the energy before its first counter reading from the driver's
power samples, else from the polled power; a restart does not reach back."""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
import time

import pytest
from gpu_doubles import FakeGpu, FakeNvml
from support import HelloSink

from radtrack.listeners import nvml
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.energy_backfill import MAX_BACKFILL_S, backfill
from radtrack.listeners.smi import SmiListener
from radtrack.run.listen import ListenerProc

ENERGY = "smi/gpu0/energy_j"
SAMPLES = "smi/gpu0/power_sample_w"
PREFIX = "radtrack.listener.smi.gpu0"


@pytest.fixture(autouse=True)
def _fresh_nvml():
    nvml.reset()
    yield
    nvml.reset()


def test_integrates_the_samples_between_the_start_and_the_reading():
    us = 1_000_000
    samples = [(10 * us, 100.0), (11 * us, 300.0), (12 * us, 300.0), (14 * us, 500.0)]
    got = backfill(samples, since=10.5, at=13.0, polled_w=1.0)
    assert got is not None and got.source == "driver power samples" and got.extrapolated_s == 0
    # 200 W at 10.5 (between 100 and 300), 300 W at 11 and 12, held at 300 W to 13.0
    assert got.joules == pytest.approx(0.5 * 250 + 300 + 300)
    assert got.seconds == pytest.approx(2.5)
    # a sample after the reading is not used (the counter covers that time)
    assert backfill(samples[:3], since=10.5, at=13.0, polled_w=None).joules == pytest.approx(got.joules)


def test_a_ring_that_begins_after_the_start_extrapolates_its_oldest_sample():
    us = 1_000_000
    got = backfill([(12 * us, 200.0), (13 * us, 400.0)], since=10.0, at=13.5, polled_w=50.0)
    assert got is not None and got.extrapolated_s == pytest.approx(2.0)
    assert got.joules == pytest.approx(2 * 200 + 300 + 0.5 * 400)


def test_without_samples_the_polled_power_is_held_over_the_gap():
    got = backfill([], since=10.0, at=10.8, polled_w=70.0)
    assert got is not None and got.source == "polled power"
    assert got.joules == pytest.approx(56.0) and got.extrapolated_s == pytest.approx(0.8)
    assert backfill([], since=10.0, at=10.8, polled_w=None) is None
    assert backfill([(1, float("nan"))], since=10.0, at=10.8, polled_w=None) is None


def test_no_backfill_for_an_empty_or_implausible_span():
    assert backfill([(10_000_000, 1.0)], since=10.0, at=10.0, polled_w=5.0) is None
    assert backfill([(10_000_000, 1.0)], since=10.0, at=9.0, polled_w=5.0) is None
    assert backfill([], since=0.0, at=MAX_BACKFILL_S + 1, polled_w=5.0) is None


def _ring_now(gpu: FakeGpu, watts: float) -> int:
    """The driver's ring full of samples up to now, at ``watts``; returns now in us."""
    now_us = int(time.time() * 1e6)
    gpu.take_power_samples(gpu.ring_depth, now_us - (gpu.ring_depth - 1) * 20_000, mw=int(watts * 1000))
    return now_us


def test_smi_counts_its_energy_from_the_run_start(monkeypatch):
    gpu = FakeGpu()
    FakeNvml(monkeypatch, [gpu])
    _ring_now(gpu, 300.0)
    since = time.time() - 1.0  # the script started a second before the listener
    smi = SmiListener(ListenerConfig(interval=0.1, since=since))
    smi.probe()
    tags = smi.tags()
    assert tags[f"{PREFIX}.energy_backfill_source"] == "driver power samples"
    assert 1.0 <= float(tags[f"{PREFIX}.energy_backfill_s"]) < 1.5  # since, to the counter read
    assert float(tags[f"{PREFIX}.energy_backfill_extrapolated_s"]) == 0
    first = smi.sample()
    timed = smi.timed_samples()
    zero = [s for s in timed if ENERGY in s.values]
    assert [(s.t, s.values[ENERGY]) for s in zero] == [(since, 0.0)]  # 0 J at the start
    # 300 W over the second before the probe, plus the counter's own step to the sample
    recovered = float(tags[f"{PREFIX}.energy_backfill_s"]) * 300.0
    assert first[ENERGY] == pytest.approx(recovered + gpu.energy_step_mj / 1000, abs=3.0)
    # the driver's power samples since the start are the run's (not only the ones after
    # the listener opened the ring)
    stamps = [s.t for s in timed if SAMPLES in s.values]
    assert stamps and min(stamps) > since and min(stamps) < since + 0.05


def test_without_the_ring_smi_recovers_from_the_polled_power(monkeypatch):
    gpu = FakeGpu()  # no power sample buffer
    FakeNvml(monkeypatch, [gpu])
    since = time.time() - 0.5
    smi = SmiListener(ListenerConfig(interval=0.1, since=since))
    smi.probe()
    tags = smi.tags()
    assert tags[f"{PREFIX}.energy_backfill_source"] == "polled power"
    held = float(tags[f"{PREFIX}.energy_backfill_s"])
    first = smi.sample()
    polled = first["smi/gpu0/power_w"]  # what the probe read too
    assert first[ENERGY] == pytest.approx(polled * held + gpu.energy_step_mj / 1000, rel=0.01)


@pytest.mark.parametrize("config", [ListenerConfig(interval=0.1),
                                    ListenerConfig(interval=0.1, since=0.0, resume={SAMPLES: 1})],
                         ids=["no-since", "restart"])
def test_no_reach_back_without_a_start_or_on_a_restart(monkeypatch, config):
    gpu = FakeGpu()
    FakeNvml(monkeypatch, [gpu])
    _ring_now(gpu, 300.0)
    smi = SmiListener(config)
    smi.probe()
    assert not any("energy_backfill" in k for k in smi.tags())
    assert smi.sample()[ENERGY] == pytest.approx(gpu.energy_step_mj / 1000)
    assert all(ENERGY not in s.values for s in smi.timed_samples())


@pytest.mark.parametrize("reads", [True, False], ids=["restart-after-reading", "died-before-reading"])
def test_a_restart_reaches_back_only_if_nothing_was_read(tmp_path, reads):
    """The launcher passes ``--since`` to a listener's process until one has read; a
    restart after that picks up from its resume positions instead (its energy counts from
    the restart), while one whose predecessor died before reading still reaches back."""
    script = textwrap.dedent(f"""
        import json, sys
        print(json.dumps({{"type": "hello", "listener": "x", "metrics": [],
                          "tags": {{"argv": json.dumps(sys.argv[1:])}}}}), flush=True)
        if {reads}:
            print(json.dumps({{"type": "sample", "t": 1.0, "v": {{}}}}), flush=True)
    """)

    sink = HelloSink()
    lp = ListenerProc("x", sink, 0.1, [], 1, tmp_path, {}, since=1234.5)  # type: ignore[arg-type]
    lp.launch = dataclasses.replace(lp.launch, runner=(sys.executable, "-c", script))
    for _ in range(2):
        lp.start()
        assert lp.proc is not None and lp.proc.wait(20) == 0
        lp.reader.join(10)  # type: ignore[union-attr]
    first, restart = (json.loads(h.tags["argv"]) for h in sink.hellos)
    assert first[first.index("--since") + 1] == "1234.500000"
    assert ("--since" in restart) is not reads


def test_a_shared_sampler_reaches_back_only_while_no_member_has_read():
    from radtrack.listeners.protocol import ListenerLaunch

    a = ListenerLaunch.one("smi", 0.1, since=5.0)
    b = ListenerLaunch.one("top", 0.1, since=5.0)
    assert ListenerLaunch.shared([a, b]).since == 5.0
    read = dataclasses.replace(a, since=None)  # smi has read
    assert ListenerLaunch.shared([b, read]).since is None
    assert ListenerLaunch.shared([read, b]).since is None
