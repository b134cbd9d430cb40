"""smi, dcgm (NVML GPM), top and iostat in one shared sampler process, with NVML doubles in every process
(tests/doubles/nvml_scenario.py): ``python -m radtrack.listeners smi+dcgm@0.4`` itself, and
the launcher's listener handles over real listener subprocesses for restarts and failures.
Each listener keeps its keys, pace, tags and resume positions. Through the CLI into a real
store: tests/postrun/test_attribution_e2e.py (rows with smi+dcgm@1 on two GPUs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID  # noqa: E402

from radtrack.listeners.base import HOST_SAMPLER  # noqa: E402
from radtrack.listeners.protocol import Message, Samples, decode_line, samples_of  # noqa: E402
from radtrack.run.listen import SHARED_SAMPLER_ENV, ListenerProc, SharedSampler, start_listeners  # noqa: E402

POWER_KEY = "smi/gpu0/power_sample_w"


def _scenario(tmp_path: Path, **gpu: Any) -> dict[str, str]:
    return nvml_scenario.write(tmp_path / "nvml.json",
                               [{"uuid": H100_UUID, "watts": 300.0, "procs": [], **gpu}])


def _listeners(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = {**os.environ, "PATH": os.path.dirname(sys.executable), **env}  # no dcgmi: GPM
    return subprocess.Popen([sys.executable, "-m", "radtrack.listeners", *args], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_smi_and_dcgm_share_one_process_each_with_its_own_keys_pace_and_tags(tmp_path):
    p = _listeners("smi+dcgm@0.4", "--interval", "0.1", "--devices", "0", env=_scenario(tmp_path))
    time.sleep(3.0)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert all(m["type"] in ("hello", "sample") for m in lines), lines
    hellos = {m["listener"]: m for m in lines if m["type"] == "hello"}
    assert set(hellos) == {"smi", "dcgm"}
    assert hellos["smi"]["pid"] == hellos["dcgm"]["pid"] == p.pid  # one process for both
    sampler = f"shared: smi+dcgm (pid {p.pid})"  # the tag that tells a user
    assert hellos["smi"]["tags"]["radtrack.listener.smi.sampler"] == sampler
    assert hellos["dcgm"]["tags"]["radtrack.listener.dcgm.sampler"] == sampler
    assert hellos["dcgm"]["tags"]["radtrack.listener.dcgm.backend"] == "gpm"
    assert (hellos["smi"]["interval"], hellos["dcgm"]["interval"]) == (0.1, 0.4)
    for name, every in (("smi", 0.1), ("dcgm", 0.4)):
        samples = [m for m in lines if m["type"] == "sample" and m["listener"] == name]
        assert all(k.startswith(f"{name}/") for m in samples for k in m["v"])
        assert all(set(m["v"]) <= {s["key"] for s in hellos[name]["metrics"]} for m in samples)
        paced = [m["t"] for m in samples[:-1]]  # the last: the reading at stop
        assert np.median(np.diff(paced)) == pytest.approx(every, rel=0.15)
    smi_last = [m for m in lines if m["type"] == "sample" and m["listener"] == "smi"][-1]
    assert "smi/gpu0/energy_j" in smi_last["v"]  # the final reading reads everything


def test_one_listener_alone_prints_what_it_always_did(tmp_path):
    p = _listeners("dcgm", "--interval", "0.1", "--count", "2", env=_scenario(tmp_path))
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    hello, *samples = (json.loads(x) for x in out.splitlines())
    assert set(hello) == {"type", "listener", "metrics", "tags", "interval"}
    assert "radtrack.listener.dcgm.sampler" not in hello["tags"]
    assert len(samples) == 2 and all(set(m) == {"type", "t", "v"} for m in samples)


class _Sink:
    """The launcher's sink as far as listener handles see it: lines kept per listener (as
    the JSON objects they are on the wire)."""

    def __init__(self) -> None:
        self.lines: dict[str, list[dict[str, Any]]] = {}

    def feed(self, name: str, line: str, msg: Message | None = None) -> Message | None:
        if not line.strip():
            return None
        if msg is None:
            line, msg = decode_line(line.strip())
        # a columnar batch line counts as the sample lines it carries (protocol.samples_of)
        batch = samples_of(msg) if isinstance(msg, Samples) else []
        self.lines.setdefault(name, []).extend(
            [{"type": "sample", "t": s.t, "v": s.values} for s in batch] or [json.loads(line)])
        return msg

    def of(self, name: str, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.lines.get(name, []) if m["type"] == kind]


def _start(tmp_path: Path, env: dict[str, str]) -> tuple[_Sink, list[ListenerProc]]:
    """smi at 0.1 s and dcgm at 0.5 s, started as the launcher starts a run's listeners."""
    sink = _Sink()
    full = {**os.environ, "PATH": os.path.dirname(sys.executable), **env}  # no dcgmi
    lps = start_listeners([("smi", 0.1), ("dcgm", 0.5)], sink, ["0"], os.getpid(),  # type: ignore[arg-type]
                          tmp_path, full)
    deadline = time.monotonic() + 30
    assert all(lp.wait_ready(deadline) for lp in lps), sink.lines
    return sink, lps


def _watch(lps: list[ListenerProc], seconds: float) -> list[tuple[str, str]]:
    """The launcher's loop: check every 50 ms; returns (listener, change) events."""
    events = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for lp in lps:
            change = lp.check()
            if change:
                events.append((lp.name, change))
        time.sleep(0.05)
    return events


def test_a_dead_shared_sampler_restarts_with_both_resume_positions(tmp_path):
    # a ring deep enough (10 s) to hold every sample taken while no listener runs: with
    # the position passed on, none may be missed; without it, the restart would skip them
    sink, (smi, dcgm) = _start(tmp_path, _scenario(tmp_path, power_ring=True, ring_depth=500))
    try:
        assert smi.proc is dcgm.proc  # one process for both
        first = smi.proc
        assert first is not None
        time.sleep(1.5)  # the ring is read once a second: a resume position exists
        position = smi.resume[POWER_KEY]
        os.kill(first.pid, signal.SIGKILL)
        events = _watch([smi, dcgm], 2.0)  # 1 s backoff, then the restart
        assert [n for n, _ in events] == ["smi", "dcgm"]
        assert all(e.startswith("restarted 1x") for _, e in events)
        assert smi.proc is dcgm.proc and smi.proc is not first and smi.proc.poll() is None
        assert smi.wait_ready(time.monotonic() + 20) and dcgm.wait_ready(time.monotonic() + 20)
        argv = list(smi.proc.args)
        assert argv[3] == "smi@0.1+dcgm@0.5"
        resumed = json.loads(argv[argv.index("--resume") + 1])  # both listeners' positions
        assert set(resumed) == {POWER_KEY} and resumed[POWER_KEY] >= position
        time.sleep(1.5)
    finally:
        smi.stop()
        dcgm.stop()
    stamps = [round(m["t"] * 1e6) for m in sink.of("smi", "sample") if POWER_KEY in m["v"]]
    # every driver sample once, in order, none missed across the restart
    assert len(stamps) > 100 and stamps == sorted(set(stamps))
    assert set(np.diff(stamps)) == {20_000}
    hellos = sink.of("smi", "hello") + sink.of("dcgm", "hello")
    assert len(hellos) == 4 and len({h["pid"] for h in hellos}) == 2  # two processes, in turn
    assert len(sink.of("dcgm", "sample")) >= 4


def test_a_listener_failing_inside_goes_on_alone_and_the_other_is_not_interrupted(tmp_path):
    sink, (smi, dcgm) = _start(tmp_path, _scenario(tmp_path, gpm_fails_after=3))
    try:
        shared = smi.proc
        events = _watch([smi, dcgm], 3.5)
        assert events and events[0][0] == "dcgm" and events[0][1].startswith("restarted 1x: NVMLError")
        assert smi.proc is shared and shared is not None and shared.poll() is None  # smi went on
        assert smi.restarts == 0 and dcgm.restarts >= 1
        assert dcgm.sampler is None  # restarted in a process of its own
        assert dcgm.proc is not None and dcgm.proc is not shared
    finally:
        smi.stop()
        dcgm.stop()
    errors = sink.of("dcgm", "error")
    assert errors and errors[0]["listener"] == "dcgm"
    assert not sink.of("smi", "error")
    times = [m["t"] for m in sink.of("smi", "sample") if "smi/gpu0/power_w" in m["v"]]
    assert max(np.diff(times)) < 0.5  # no gap in smi's readings while dcgm failed
    solo = sink.of("dcgm", "hello")[-1]
    assert "pid" not in solo and "radtrack.listener.dcgm.sampler" not in solo["tags"]


def test_separate_processes_when_asked_and_for_dcgm_with_dcgmi(tmp_path):
    env = _scenario(tmp_path)
    sink, (smi, dcgm) = _start(tmp_path, {**env, SHARED_SAMPLER_ENV: "0"})
    try:
        assert smi.proc is not dcgm.proc and smi.sampler is None and dcgm.sampler is None
    finally:
        smi.stop()
        dcgm.stop()
    for name in ("smi", "dcgm"):  # the lines of a listener alone are as they always were
        (hello,) = sink.of(name, "hello")
        assert "pid" not in hello and f"radtrack.listener.{name}.sampler" not in hello["tags"]
        assert all("listener" not in m for m in sink.of(name, "sample"))
    bindir = tmp_path / "bin"  # DCGM installed: dcgm reads dcgmi dmon, in a process of its own
    bindir.mkdir()
    (bindir / "dcgmi").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "dcgmi").chmod(0o755)
    from radtrack.listeners.dcgm import DcgmListener
    from radtrack.listeners.smi import SmiListener

    assert DcgmListener.shared_sampler({"PATH": str(bindir)}) is None
    assert DcgmListener.shared_sampler({"PATH": str(tmp_path)}) == SmiListener.shared_sampler({}) == HOST_SAMPLER


def test_host_listeners_share_the_gpu_listeners_process(tmp_path):
    """smi, top and iostat of one run: one process, woken once for all; each keeps its own
    keys, pace and hello, and top follows the run's tree from inside it."""
    sink = _Sink()
    env = {**os.environ, "PATH": os.path.dirname(sys.executable), **_scenario(tmp_path)}
    lps = start_listeners([("smi", 0.1), ("top", 0.2), ("iostat", 0.5)], sink, ["0"], os.getpid(),  # type: ignore[arg-type]
                          tmp_path, env)
    try:
        assert all(lp.wait_ready(time.monotonic() + 30) for lp in lps), sink.lines
        smi, top, iostat = lps
        assert smi.proc is top.proc is iostat.proc and smi.proc is not None
        pid = smi.proc.pid
        time.sleep(2.0)
    finally:
        for lp in lps:
            lp.stop()
    tag = f"shared: smi+top+iostat (pid {pid})"
    for name, every in (("smi", 0.1), ("top", 0.2), ("iostat", 0.5)):
        (hello,) = sink.of(name, "hello")
        assert hello["pid"] == pid and hello["tags"][f"radtrack.listener.{name}.sampler"] == tag
        samples = [m for m in sink.of(name, "sample") if m["v"]]
        assert samples and all(k.startswith(f"{name}/") for m in samples for k in m["v"])
        paced = [m["t"] for m in samples[:-1]]  # no driver power ring here: all are paced
        assert np.median(np.diff(paced)) == pytest.approx(every, rel=0.2), name
    top_keys = {k for m in sink.of("top", "sample") for k in m["v"]}
    assert {"top/cpu_pct", "top/proc/rss_mib", "top/proc/cpu_pct"} <= top_keys  # this test's tree
    assert any("smi/gpu0/power_w" in m["v"] for m in sink.of("smi", "sample"))


def test_host_listeners_keep_their_own_processes_when_asked(tmp_path):
    sink = _Sink()
    env = {**os.environ, "PATH": os.path.dirname(sys.executable), **_scenario(tmp_path),
           SHARED_SAMPLER_ENV: "0"}
    lps = start_listeners([("smi", 0.1), ("top", 0.1)], sink, ["0"], os.getpid(),  # type: ignore[arg-type]
                          tmp_path, env)
    try:
        assert all(lp.wait_ready(time.monotonic() + 30) for lp in lps), sink.lines
        assert lps[0].proc is not lps[1].proc and all(lp.sampler is None for lp in lps)
    finally:
        for lp in lps:
            lp.stop()
    assert "radtrack.listener.top.sampler" not in sink.of("top", "hello")[0]["tags"]


def test_a_sampler_left_with_one_listener_restarts_as_a_plain_listener_process(tmp_path):
    smi, dcgm = (ListenerProc(n, _Sink(), every, ["0"], 1, tmp_path, {})  # type: ignore[arg-type]
                 for n, every in (("smi", 0.1), ("dcgm", 1.0)))
    sampler = SharedSampler([smi, dcgm])
    argv = sampler.argv()
    assert argv[3:6] == ["smi@0.1+dcgm@1", "--interval", "0.1"] and argv[6:] == smi.argv()[6:]
    dcgm.resume = {"dcgm/x": 1}
    smi.resume = {POWER_KEY: 2}
    assert json.loads(sampler.argv()[-1]) == {"dcgm/x": 1, POWER_KEY: 2}
    sampler.leave(dcgm)
    assert dcgm.sampler is None and sampler.argv() == [*smi.launch.argv(), "--resume",
                                                       json.dumps({POWER_KEY: 2})]
