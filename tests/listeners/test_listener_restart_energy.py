"""Fault: a listener restarted mid-run (docs/architecture.md "Faults"). A RAPL package's
``energy_uj`` vanishes for 2 s while the run's script draws 20 W from it: the rapl listener
fails, is restarted, and its counter counts from 0 again. The run's counter energy sums the
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

zone = Path(sys.argv[1]) / "intel-rapl:0"
uj, true_uj, step_s, watts = int((zone / "energy_uj").read_text()), 0, 0.05, 20.0
for i in range(140):  # 7 s at 20 W; steps 40-79 (2 s) with no energy_uj to read
    time.sleep(step_s)
    uj += int(watts * step_s * 1e6)
    true_uj += int(watts * step_s * 1e6)
    if 40 <= i < 80:
        (zone / "energy_uj").unlink(missing_ok=True)
        continue
    tmp = zone / "energy_uj.tmp"
    tmp.write_text(f"{uj}\\n")
    tmp.replace(zone / "energy_uj")  # a reader never sees half a number
Path(sys.argv[2]).write_text(json.dumps({"true_j": true_uj / 1e6}))
"""


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
    true_j = json.loads(log.read_text())["true_j"]
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
    # both lives, and the gap between them at the power either side (~20 W): the script
    # drew true_j (140 J) over its 7 s; the last-minus-first of one life was under half that
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
