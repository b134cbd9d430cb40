"""smi and dcgm (NVML GPM) in one shared sampler process, with NVML doubles in every process
(tests/doubles/nvml_scenario.py): through the real CLI into a real SQLite store, and through
the launcher's listener handles with real ``python -m radtrack.listeners`` subprocesses for
restarts and failures. Each listener keeps its keys, pace, tags and resume positions."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli  # noqa: E402

from radtrack.listen import SHARED_SAMPLER_ENV, ListenerProc, start_listeners  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"
POWER_KEY = "smi/gpu0/power_sample_w"


def _scenario(tmp_path: Path, **gpu: Any) -> dict[str, str]:
    return nvml_scenario.write(tmp_path / "nvml.json",
                               [{"uuid": H100_UUID, "watts": 300.0, "procs": [], **gpu}])


def _row_run(store: str, experiment: str) -> Any:
    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name(experiment)
    return c, next(r for r in c.search_runs([exp.experiment_id]) if r.data.tags["radtrack.role"] == "row")


def test_smi_and_dcgm_share_one_process_each_with_its_own_keys_pace_and_tags(store, tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch)  # nvidia-smi double on PATH, no dcgmi: dcgm reads GPM
    p = radtrack_cli("-e", "shared", "-d", "0", "-l", "smi+dcgm@0.4+top", "--interval", "0.1",
                     str(SCRIPTS / "busy.py"), "2", env=_scenario(tmp_path), timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    c, run = _row_run(store, "shared")
    tags = run.data.tags
    assert tags["radtrack.listener.smi"] == tags["radtrack.listener.dcgm"] == "ok"
    # the tag that says they shared one process: the same value, naming both and its pid
    shared = tags["radtrack.listener.smi.sampler"]
    assert shared.startswith("shared: smi+dcgm (pid ") and tags["radtrack.listener.dcgm.sampler"] == shared
    assert "radtrack.listener.top.sampler" not in tags  # top keeps a process of its own
    assert tags["radtrack.listener.dcgm.backend"] == "gpm"
    assert tags["radtrack.listener.smi.interval_s"] == "0.1"
    assert tags["radtrack.listener.dcgm.interval_s"] == "0.4"
    metrics = run.data.metrics
    assert "system/smi/gpu0/power_w" in metrics and "system/dcgm/gpu0/sm_active_pct" in metrics
    assert metrics["summary/dcgm/gpu0/sm_active_pct/mean"] == pytest.approx(56.5, abs=0.1)
    # one trace per listener, each at its own pace
    for name, every in (("smi", 0.1), ("dcgm", 0.4)):
        trace = pd.read_parquet(c.download_artifacts(run.info.run_id, f"telemetry/{name}.parquet",
                                                     str(tmp_path)))
        assert all(k.startswith(f"{name}/") for k in trace.columns[2:])
        assert np.median(np.diff(trace["time"].to_numpy())) == pytest.approx(every, rel=0.2)
        stored = c.get_metric_history(run.info.run_id, f"system/{name}/gpu0/"
                                      + ("power_w" if name == "smi" else "sm_active_pct"))
        assert len(stored) == trace.iloc[:, 2 + list(trace.columns[2:]).index(
            "smi/gpu0/power_w" if name == "smi" else "dcgm/gpu0/sm_active_pct")].notna().sum()


class _Sink:
    """The launcher's sink as far as listener handles see it: lines kept per listener."""

    def __init__(self) -> None:
        self.lines: dict[str, list[dict[str, Any]]] = {}

    def feed(self, name: str, line: str, msg: dict[str, Any] | None = None) -> dict[str, Any] | None:
        if not line.strip():
            return None
        msg = msg if msg is not None else json.loads(line)
        self.lines.setdefault(name, []).append(msg)
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
    sink, (smi, dcgm) = _start(tmp_path, _scenario(tmp_path, power_ring=True))
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
    # every driver sample once, in order, none missed across the restart (the ring holds
    # 2.4 s; the restart took about 1 s)
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
    assert DcgmListener.shared_sampler({"PATH": str(tmp_path)}) == SmiListener.shared_sampler({}) == "nvml"
