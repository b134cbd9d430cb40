"""Fault: a listener restarted mid-run (docs/architecture.md "Faults"). A RAPL package's
``energy_uj`` vanishes for 2 s while the run's script draws 20 W from it: the rapl listener
fails, is restarted, and its counter counts from 0 again (the script draws in real time and
logs every value it writes, so the truth is known over whatever span the listener's readings
cover, however late a loaded host starts it). The run's counter energy sums the
listener's lives, the gap between them bridged at the power either side; it agrees with the
energy the tree really counted and with the run's accounting (the report's ``energy_j``); the
report's header names it CPU-side energy, not GPU energy. One launch, one in-process report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import radtrack_cli, report_here

SCRIPT = """import json, sys, time
from pathlib import Path

# a package drawing 20 W in real time for 7 s of the script's clock, whatever the host's
# load; from 2 s to 4 s there is no energy_uj to read. Every value written is logged with
# its time, so the test knows what the counter held at any instant.
zone = Path(sys.argv[1]) / "intel-rapl:0"
uj0, watts = int((zone / "energy_uj").read_text()), 20.0
t0 = time.time()
log = [(t0, uj0)]
while (now := time.time()) - t0 < 7.0:
    uj = uj0 + int(watts * (now - t0) * 1e6)
    if 2.0 <= now - t0 < 4.0:
        (zone / "energy_uj").unlink(missing_ok=True)
    else:
        tmp = zone / "energy_uj.tmp"
        tmp.write_text(f"{uj}\\n")
        tmp.replace(zone / "energy_uj")  # a reader never sees half a number
    log.append((time.time(), uj))
    time.sleep(0.05)
Path(sys.argv[2]).write_text(json.dumps({"written": log}))
"""


def _held(written: list[list[float]], at_s: float) -> float:
    """The counter's value (J) at ``at_s``: the last value written at or before it."""
    before = [uj for t, uj in written if t <= at_s]
    return (before[-1] if before else written[0][1]) / 1e6


def _tree(root: Path) -> None:
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("1000000\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")


def test_a_restarted_listeners_counter_energy_sums_its_lives(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from mlflow import MlflowClient

    root, log = tmp_path / "powercap", tmp_path / "true.json"
    _tree(root)
    (tmp_path / "draw.py").write_text(SCRIPT)
    env = {"RADTRACK_POWERCAP_ROOT": str(root), "RADTRACK_RAPL_EVERY_S": "0",
           "RADTRACK_WAIT_LISTENERS": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    p = radtrack_cli("-e", "restart", "-l", "rapl", "--interval", "0.1", str(tmp_path / "draw.py"),
                     str(root), str(log), env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    written = json.loads(log.read_text())["written"]
    c = MlflowClient(store)
    (run,) = [r for r in c.search_runs([c.get_experiment_by_name("restart").experiment_id])
              if r.data.tags.get("radtrack.role") == "row"]
    assert run.data.tags.get("radtrack.listener.rapl.restarts", "") or any(
        "restarted" in v for v in run.data.tags.values()), run.data.tags  # it did restart
    history = sorted(c.get_metric_history(run.info.run_id, "system/rapl/pkg0/energy_j"),
                     key=lambda m: (m.timestamp, m.step))
    values = [m.value for m in history]
    assert any(b < a for a, b in zip(values, values[1:], strict=False)), values  # a second life
    energy = run.data.metrics["summary/rapl/pkg0/energy_j"]
    # both lives, and the gap between them at the power either side (20 W): the truth is
    # what the tree's counter really counted over the span the readings cover within the
    # run (on a loaded host the listener starts late; that is no energy it could have seen)
    a = max(history[0].timestamp, run.info.start_time) / 1e3
    b = min(history[-1].timestamp, run.info.end_time) / 1e3
    true_j = _held(written, b) - _held(written, a)
    assert b - a > 4.0 and true_j > 80.0, (a, b, true_j)  # both lives and the gap are in it
    # one life's last-minus-first is under half of it: only the sum of lives gets this close
    assert energy == pytest.approx(true_j, rel=0.1), (energy, true_j, values)

    text = report_here(monkeypatch, capsys, "restart")
    assert text.returncode == 0, text.stderr
    assert "Measured CPU-side energy of 1 workload(s)" in text.stdout
    assert "Measured GPU energy" not in text.stdout
    shown = report_here(monkeypatch, capsys, "restart", "--format", "json")
    rows = json.loads(shown.stdout)["runs"]
    (row,) = [r for r in rows if r.get("run_id") == run.info.run_id]
    # the accounting (solo: all of the host's CPU side is the run's) agrees with the counter
    assert float(row["energy_j"]) == pytest.approx(energy, rel=0.05), row


def test_a_counters_lives_are_summed_and_their_gaps_bridged() -> None:
    """stats.counter_delta (summaries, device and node energy) and stitch_counter (the
    accounting's and the energy interval's counter): 20 W read every second, a restart after
    7 s that loses 2 s and counts from 0 again; a drop with no times counts the gap 0."""
    import numpy as np

    from radtrack.compute.stats import counter_delta, counter_lives, stitch_counter

    t = np.arange(17.0)
    one = 20.0 * t
    restarted = np.concatenate([one[:8], 20.0 * (t[10:] - 10.0)])
    times = np.concatenate([t[:8], t[10:]])
    assert counter_delta(one, t) == counter_lives(restarted, times)[0] == 320.0
    assert counter_lives(restarted, times)[1] == 2
    assert counter_delta(restarted) == 140.0 + 120.0  # no times: the 2 s gap unknown
    whole = stitch_counter(restarted, times)
    assert np.all(np.diff(whole) > 0) and whole[-1] - whole[0] == 320.0
    assert np.isnan(counter_delta(np.array([5.0, np.nan])))
    # power read where the counter was: a reading inside the gap bridges it (a second sensor
    # that lived through it); readings that only border it do not, one of them low (the
    # counter's last update before it died came half an interval late): the lives' mean rates
    inside = (np.array([6.0, 8.0, 9.0, 11.0]), np.array([20.0, 30.0, 30.0, 20.0]))
    assert stitch_counter(restarted, times, inside)[-1] == pytest.approx(140.0 + 85.0 + 120.0)  # 25-30-30-25 W
    edges = (times, np.where(times == 7.0, 5.0, 20.0))
    assert stitch_counter(restarted, times, edges)[-1] == pytest.approx(320.0)
