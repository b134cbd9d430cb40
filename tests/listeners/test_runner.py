"""The listener runner: JSON-lines protocol, monotonic deadlines, the final reading at stop."""

from __future__ import annotations

import io
import json
import os
import signal
import time

import pytest

from radtrack.listeners import runner
from radtrack.listeners.base import Listener, ListenerConfig, MetricSpec


class _Counting(Listener):
    name = "counting"

    def probe(self) -> list[MetricSpec]:
        self.n = 0
        return [MetricSpec("counting/host/n_count", "count"), MetricSpec("counting/host/final_flag", "flag")]

    def sample(self) -> dict[str, float]:
        self.n += 1
        if self.n == 5:
            os.kill(os.getpid(), signal.SIGTERM)  # as the launcher stops a listener
        return {"counting/host/n_count": float(self.n), "not/probed_x": 1.0, "counting/host/final_flag": float("nan")}

    def final_sample(self) -> dict[str, float]:
        return {"counting/host/n_count": float(self.n), "counting/host/final_flag": 1.0}


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "get", lambda name: _Counting)
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGTERM, old[0])
    signal.signal(signal.SIGINT, old[1])


def test_stop_emits_a_final_reading_and_drops_unprobed_and_nan(counting: None) -> None:
    out = io.StringIO()
    t0 = time.time()
    assert runner.run("counting", ListenerConfig(interval=0.02), out=out) == 0
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[0]["type"] == "hello" and len(lines[0]["metrics"]) == 2
    samples = [x["v"] for x in lines[1:]]
    assert [s["counting/host/n_count"] for s in samples] == [1, 2, 3, 4, 5, 5]
    assert all("not/probed_x" not in s for s in samples)
    assert all("counting/host/final_flag" not in s for s in samples[:-1])  # NaN is dropped
    assert samples[-1]["counting/host/final_flag"] == 1.0
    # paced by the deadlines start + k * interval, never early (a reading late by less than
    # an interval is taken at once, so two can come close together on a loaded machine)
    times = [x["t"] - t0 for x in lines[1:-1]]
    assert all(t >= i * 0.02 - 0.002 for i, t in enumerate(times)), times
    assert times[-1] < 5.0, times


def test_sigterm_ends_the_wait_for_the_next_reading_at_once() -> None:
    """A listener stopped between two readings exits at once with its final reading, not at
    its next deadline: the launcher's end (and the detached end's prompt) waits for it."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "radtrack.listeners", "top", "--interval", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = [json.loads(proc.stdout.readline()) for _ in range(2)]  # the hello, the first reading
    assert [x["type"] for x in lines] == ["hello", "sample"]
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert time.monotonic() - t0 < 10  # not the 30-s interval
    assert [json.loads(x)["type"] for x in rest.splitlines()] == ["sample"]  # the final one
