"""Fault: a GPU listener killed mid-run and again just before its run ends (docs/architecture.md
"Faults"). smi reads the energy counter every 30 s where the driver's power samples fill between.
SIGKILLed 1 s into a 5-s run, it is restarted 1 s later and counts from 0 again (a second life,
the gap between the two bridged by the power readings); SIGKILLed again at 4.5 s, its restart
(2 s of backoff) comes after the run ended, so no final reading comes. The run's counter energy
must still be the GPU's over the whole run (the tail from the last reading to the end bridged by
the power readings: radtrack/store/spans.py), not the last reading held (the tail at 0 W: 931 J
of a 2063-J run before), with its 95 % interval (none was left out); the accounting agrees. One
launch, NVML doubles (a 400 W H200 whose counter and power sample ring follow the wall clock:
tests/doubles/nvml_scenario.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import radtrack_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402

WATTS = 400.0
SCRIPT = """import os, signal, sys, time
seconds, kills = float(sys.argv[1]), [float(a) for a in sys.argv[2:]]
t0, killed = time.monotonic(), []
while time.monotonic() - t0 < seconds:
    time.sleep(0.02)
    if kills and time.monotonic() - t0 > kills[0]:
        kills.pop(0)
        for pid in os.listdir("/proc"):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            except OSError:
                continue
            try:  # only this run's listener: a child of this script's launcher (another
                # xdist worker's tests run smi listeners of their own meanwhile)
                ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if (b"radtrack.listeners" in cmd and b"smi" in b" ".join(cmd) and int(pid) != os.getpid()
                    and ppid == os.getppid()):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(pid)
print("killed", len(killed), flush=True)
"""


def test_a_counter_whose_listener_died_before_the_end_keeps_the_runs_tail(
        store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    env = nvml_scenario.write(tmp_path / "scenario.json", [{
        "uuid": "GPU-killed", "watts": WATTS, "power_ring": True, "name": "NVIDIA H200",
        "procs": [{"match": "killer.py", "sm": 100, "mem_mib": 1000}]}])
    (tmp_path / "killer.py").write_text(SCRIPT)
    # killed at 1 s (restarted 1 s later: a second life, the gap bridged), then at 4.5 s of 5
    # (the restart's 2-s backoff outlasts the run: the tail)
    p = radtrack_cli("-e", "killed", "-l", "smi", "--interval", "0.1", str(tmp_path / "killer.py"),
                     "5", "1", "4.5", env={**env, "RADTRACK_WAIT_LISTENERS": "1"}, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "killed 2" in p.stdout and "restarted 2x" in p.stderr, p.stdout + p.stderr
    assert "energy intervals left out" not in p.stderr, p.stderr
    c = MlflowClient(store)
    (run,) = [r for r in c.search_runs([c.get_experiment_by_name("killed").experiment_id])
              if r.data.tags.get("radtrack.role") == "row"]
    m = run.data.metrics
    history = sorted(c.get_metric_history(run.info.run_id, "system/smi/gpu0/energy_j"),
                     key=lambda x: (x.timestamp, x.step))
    drawn = WATTS * m["summary/duration_s"]
    energy = m["summary/smi/gpu0/energy_j"]
    assert energy == pytest.approx(drawn, rel=0.03), ([(h.timestamp, h.value) for h in history], drawn)
    values = [h.value for h in history]
    assert any(b < a for a, b in zip(values, values[1:], strict=False)), values  # a second life
    assert 0 < m["summary/smi/gpu0/energy_j_ci95_pct"] < 5
    assert m["summary/attribution/gpu0/energy_j"] == pytest.approx(energy, rel=0.01)
