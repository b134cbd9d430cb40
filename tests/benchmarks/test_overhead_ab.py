"""benchmarks/overhead_ab.py: listeners paused and running in alternating phases of one run.

The statistics on synthetic step times (a known effect is recovered, no effect gives an
interval around 0), the pausing (a paused process is continued on return, on SIGTERM and,
through the guardian, after SIGKILL of the controller), and one short real run with
``-l top`` on the tiny CPU workload."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
from overhead_ab import (  # noqa: E402
    assign_steps,
    pair_log_ratios,
    pooled,
    profiled_kernels,
    range_segments,
    summarise,
    table,
)


def synthetic(effect: float, pairs: int = 40, phase_s: float = 2.0, step_s: float = 0.01,
              noise: float = 0.02, seed: int = 1) -> tuple[list[float], list[dict]]:
    """Step end times of a workload whose steps take ``1 + effect`` times longer in "on"
    phases, with per-step noise and a slow drift; and the phases (random order per pair)."""
    rng = random.Random(seed)
    phases, t = [], 100.0
    for pair in range(pairs):
        for state in rng.sample(["on", "off"], 2):
            phases.append({"pair": pair, "state": state, "t0": t, "t1": t + phase_s,
                           "config": "x@0.1"})
            t += phase_s + 0.003  # the switch takes a moment
    ends, now = [], 99.0
    while now < t + 1:
        ph = next((p for p in phases if p["t0"] <= now < p["t1"]), None)
        drift = 1 + 0.05 * math.sin(now / 30)  # +-5 %: far more than the effect
        scale = 1 + effect if ph is not None and ph["state"] == "on" else 1
        now += step_s * scale * drift * (1 + rng.gauss(0, noise))
        ends.append(now)
    return ends, phases


def test_assign_steps_keeps_whole_steps_inside_and_drops_the_first():
    ends = [0.5, 1.5, 2.5, 3.0, 3.5, 4.5, 5.5]
    phases = [{"pair": 0, "state": "on", "t0": 1.0, "t1": 4.0}]
    assign_steps(ends, phases, drop=0)
    # 0.5-1.5 straddles t0, 3.5-4.5 straddles t1: inside are 1.5-2.5, 2.5-3.0, 3.0-3.5
    assert phases[0]["steps"] == 3
    assert phases[0]["mean_step_s"] == pytest.approx(2.0 / 3)
    assign_steps(ends, phases, drop=1)
    assert phases[0]["steps"] == 2 and phases[0]["mean_step_s"] == pytest.approx(0.5)


@pytest.mark.parametrize("effect", [0.0, 0.01, -0.02, 0.004])
def test_known_effect_recovered(effect):
    ends, phases = synthetic(effect)
    assign_steps(ends, phases)
    assert all(p["steps"] > 150 for p in phases)
    s = summarise(pair_log_ratios(phases))
    assert s["pairs"] == 40
    assert s["lo"] < 100 * effect < s["hi"]
    assert s["boot_lo"] < 100 * effect < s["boot_hi"]
    assert s["pct"] == pytest.approx(100 * effect, abs=0.3)
    assert s["half"] < 0.5  # 40 pairs of 2 s resolve 0.5 % despite a +-5 % drift
    assert s["ratio"] == pytest.approx(1 + s["pct"] / 100)
    assert s["within_target"] == (abs(100 * effect) < 0.5)


def test_pooling_over_runs_and_table():
    recs = []
    for run, seed in (("r1", 1), ("r2", 2)):
        ends, phases = synthetic(0.01, pairs=10, seed=seed)
        assign_steps(ends, phases)
        recs.append({"run": run, "workload": "cpu", "phases": phases})
    rows = pooled(recs)
    assert len(rows) == 1 and rows[0]["pairs"] == 20 and rows[0]["runs"] == 2
    md = table(rows)
    assert md.splitlines()[0].startswith("| config | workload | runs | pairs | on/off ratio")
    assert rows[0]["pct"] == pytest.approx(1.0, abs=0.3)
    assert "| x@0.1 | cpu | 2 | 20 | 1.0" in md and md.rstrip().endswith("| no |")


def test_too_few_pairs_give_no_interval():
    assert summarise([])["ratio"] is None
    one = summarise([math.log(1.01)])
    assert one["pct"] == pytest.approx(1.0) and one["half"] is None and not one["within_target"]


def _target() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)


def _state(pid: int) -> str:
    return psutil.Process(pid).status()


def _wait_state(pid: int, want: str, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _state(pid) == want:
            return True
        time.sleep(0.02)
    return False


CONTROLLER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {bench!r})
    from overhead_ab import Pauser, resume_on_exit
    p = Pauser()
    with resume_on_exit(p):
        p.pause({pid})
        print("paused", flush=True)
        time.sleep(60)
""")


@pytest.mark.parametrize("how", ["sigterm", "sigint", "sigkill"])
def test_paused_process_is_continued_when_the_controller_leaves(how):
    target = _target()
    ctl = None
    try:
        ctl = subprocess.Popen([sys.executable, "-c",
                                CONTROLLER.format(bench=str(BENCH), pid=target.pid)],
                               stdout=subprocess.PIPE, text=True)
        assert ctl.stdout is not None and ctl.stdout.readline().strip() == "paused"
        assert _wait_state(target.pid, psutil.STATUS_STOPPED)
        sig = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT, "sigkill": signal.SIGKILL}[how]
        ctl.send_signal(sig)  # SIGKILL: no handler runs; the guardian continues it
        ctl.wait(10)
        assert _wait_state(target.pid, psutil.STATUS_SLEEPING)
    finally:
        if ctl is not None and ctl.poll() is None:
            ctl.kill()
        os.kill(target.pid, signal.SIGCONT)
        target.kill()
        target.wait()


def test_one_run_with_top_on_the_cpu_workload(tmp_path):
    out = tmp_path / "ab.json"
    argv = [sys.executable, str(BENCH / "overhead_ab.py"), "--workload", "cpu", "-l", "top",
            "--interval", "0.1", "--pairs", "3", "--phase-s", "1", "--warmup-s", "0.5",
            "--out", str(out)]
    env = {**os.environ, "RADTRACK_HOME": str(tmp_path / "home")}
    res = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["ok"] and rec["rc"] == 0 and rec["workload"] == "cpu"
    assert {"run", "listeners", "interval", "phases", "summary", "steps", "listener_procs",
            "stopped_left_after_phases"} <= set(rec)
    assert list(rec["listener_procs"].values()) == [["top"]]
    phases = rec["phases"]
    assert len(phases) == 6 and all(p["config"] == "top@0.1" for p in phases)
    for pair in range(3):  # one "on" and one "off" phase per pair, back to back
        assert sorted(p["state"] for p in phases if p["pair"] == pair) == ["off", "on"]
    for a, b in zip(phases, phases[1:], strict=False):
        assert a["t0"] < a["t1"] <= b["t0"] < a["t1"] + 0.5
        assert a["t1"] - a["t0"] == pytest.approx(1.0, abs=0.2)
    assert all(p["steps"] > 0 and p["mean_step_s"] > 0 for p in phases)
    s = rec["summary"]
    assert s["pairs"] == 3 and s["ratio"] > 0 and s["lo"] <= s["pct"] <= s["hi"]
    # resumed at the end: nothing left stopped, during the run's end or after it
    assert rec["stopped_left_after_phases"] == []
    for pid in map(int, rec["listener_procs"]):
        try:
            assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            pass  # the launcher stopped it at the run's end, as it should
    assert "| top@0.1 | cpu | 1 | 3 |" in res.stdout


STAND_IN_NCU = textwrap.dedent("""\
    #!{python}
    # Nsight Compute's stand-in: records its arguments, drops its options, runs the workload
    import json, os, sys
    args = sys.argv[1:]
    with open({log!r}, "a") as f:
        f.write(json.dumps(args) + "\\n")
    takes_value = {{"--export", "--target-processes", "--nvtx-include"}}
    i = 0
    while args[i].startswith("-"):
        i += 2 if args[i] in takes_value else 1
    rc = os.spawnvp(os.P_WAIT, args[i], args[i:])
    open(args[args.index("--export") + 1] + ".ncu-rep", "w").write("report")
    sys.exit(rc)
""")


def test_a_profiler_run_switches_its_nvtx_range_with_the_phases(tmp_path):
    """``-l ncu``: the profiler wraps the workload (never paused from outside); each "on"
    phase opens the NVTX range ``profile`` at a step boundary and each "off" one closes it,
    and the table names the configuration ``ncu range``."""
    tools, log = tmp_path / "bin", tmp_path / "ncu.jsonl"
    tools.mkdir()
    (tools / "ncu").write_text(STAND_IN_NCU.format(python=sys.executable, log=str(log)))
    (tools / "ncu").chmod(0o755)
    out = tmp_path / "ab.json"
    argv = [sys.executable, str(BENCH / "overhead_ab.py"), "--workload", "cpu", "-l", "ncu",
            "--pairs", "3", "--phase-s", "1", "--warmup-s", "0.3", "--out", str(out)]
    env = {**os.environ, "RADTRACK_HOME": str(tmp_path / "home"),
           "PATH": f"{tools}:{os.environ['PATH']}"}
    res = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["ok"] and rec["arms"] == ["nvtx"] and "listener_procs" not in rec
    (ncu_args,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert ncu_args[ncu_args.index("--nvtx-include") + 1] == "profile/"
    phases = rec["phases_signalled"]
    assert len(phases) == 6 and {p["config"] for p in phases} == {"ncu range"}
    # the range is open through every "on" phase and closed through every "off" one: it
    # switches at the first step boundary after each change of state (and closes at the end)
    switches = rec["range_switches"]

    def open_at(t: float) -> bool:
        return ([is_open for at, is_open in switches if at <= t] or [False])[-1]

    for p in phases:
        assert open_at((p["t0"] + p["t1"]) / 2) == (p["state"] == "on"), (p, switches)
    changes = sum(a["state"] != b["state"] for a, b in zip(phases, phases[1:], strict=False))
    changes += phases[0]["state"] == "on"  # the range starts closed
    assert len(switches) in (changes, changes + 1)
    # the measured phases are the range's own segments, alternating, each with whole steps
    segments = rec["phases"]
    assert [s["state"] for s in segments] == [["off", "on"][i % 2] for i in range(len(segments))] \
        or [s["state"] for s in segments] == [["on", "off"][i % 2] for i in range(len(segments))]
    assert all(s["steps"] > 0 for s in segments)
    assert rec["summary"]["pairs"] == min(sum(s["state"] == st for s in segments) for st in ("on", "off"))
    assert rec["profiled_kernels"] == {"kernels": 0, "passes_min": None, "passes_max": None}
    assert f"| ncu range | cpu | 1 | {rec['summary']['pairs']} |" in res.stdout


def test_a_profiled_step_longer_than_its_phase_counts_whole():
    """On the H100, ncu's kernel replay took a light step from 9 ms to 10 s: no step lay
    whole inside a 10-s "on" phase, and the run had no pair. The segments follow the
    range, which switches at step boundaries, so the long step counts whole."""
    ends, t = [], 100.0
    while t < 110:  # off: 10-ms steps
        t += 0.01
        ends.append(t)
    opened = ends[-1] + 1e-5  # the range opens just after the step end following the signal
    t += 10.3  # one profiled step, past the 10-s phase
    ends.append(t)
    closed = t + 1e-5
    while t < 130:
        t += 0.01
        ends.append(t)
    phases = [{"pair": 0, "state": "off", "t0": 100.005, "t1": 110.0, "config": "ncu range"},
              {"pair": 0, "state": "on", "t0": 110.0, "t1": 120.0, "config": "ncu range"},
              {"pair": 1, "state": "off", "t0": 120.0, "t1": 130.0, "config": "ncu range"}]
    signalled = [dict(p) for p in phases]
    assign_steps(ends, signalled, drop=1)
    assert signalled[1]["steps"] == 0 and pair_log_ratios(signalled) == []  # the old way
    segs = range_segments(ends, phases, [(opened, True), (closed, False)])
    assert [s["state"] for s in segs] == ["off", "on", "off"]
    assert [s["pair"] for s in segs] == [0, 0, 1]
    assign_steps(ends, segs, drop=0)
    assert segs[1]["steps"] == 1 and segs[1]["mean_step_s"] == pytest.approx(10.3)
    assert segs[0]["mean_step_s"] == pytest.approx(0.01) and segs[2]["mean_step_s"] == pytest.approx(0.01)
    # every step between the first phase's start and the last one's end, once
    assert sum(s["steps"] for s in segs) == sum(1 for e in ends[1:] if e <= 130.0)
    (log_ratio,) = pair_log_ratios(segs)
    assert math.exp(log_ratio) == pytest.approx(1030, rel=0.01)


def test_a_range_left_open_is_not_measured():
    ends = [1.0, 2.0, 3.0, 4.0]
    phases = [{"pair": 0, "state": "on", "t0": 1.5, "t1": 2.5, "config": "ncu range"}]
    assert range_segments(ends, phases, [(2.0 + 1e-6, True)]) == [
        {"state": "off", "t0": 1.5, "t1": 2.0, "config": "ncu range", "pair": 0}]


def test_ncu_log_gives_kernels_and_passes():
    log = ('==PROF== Connected to process 516\n'
           '==PROF== Profiling "elementwise_kernel" - 58: 0%....50%....100% - 10 passes\n'
           '==PROF== Profiling "sm80_xmma_fprop_implicit_gemm..." - 61: 0%....50%....100% - 12 passes\n')
    assert profiled_kernels(log) == {"kernels": 2, "passes_min": 10, "passes_max": 12}


def test_a_run_stopped_by_a_time_limit_keeps_what_it_measured(tmp_path):
    """SIGTERM (``timeout``) in the middle of the phases: the phases so far and the run's
    steps are written to --out, marked as interrupted, and no listener is left stopped."""
    out = tmp_path / "ab.json"
    argv = [sys.executable, str(BENCH / "overhead_ab.py"), "--workload", "cpu", "-l", "top",
            "--interval", "0.1", "--pairs", "50", "--phase-s", "0.5", "--warmup-s", "0.3",
            "--out", str(out)]
    env = {**os.environ, "RADTRACK_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 120
        steps: list[Path] = []
        while not steps and time.monotonic() < deadline:  # the timed steps have begun
            steps = [p for p in tmp_path.glob("overhead-ab-*/run-*/steps.f64") if p.stat().st_size > 8]
            time.sleep(0.2)
        time.sleep(2.5)  # a few phases
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    (rec,) = json.loads(out.read_text())
    assert not rec["ok"] and rec["error"].startswith("interrupted"), rec.get("error")
    assert 1 <= len(rec["phases"]) < 100 and rec["steps"] > 0
    assert rec["stopped_left_after_phases"] == []
    for pid in map(int, rec["listener_procs"]):
        try:
            assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            pass
