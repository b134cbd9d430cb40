"""The power-sensor analysis on traces recorded on an H100 (issue 30): re-analysing
benchmarks/results/h100-2026-11-24-power-sensor through the benchmark's own command
reproduces the sensor's figures and the activity model's target, without a GPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "benchmarks" / "results" / "h100-2026-11-24-power-sensor"


def test_recorded_h100_traces_reanalysed(tmp_path: Path) -> None:
    work = tmp_path / "traces"
    shutil.copytree(RECORDED, work, ignore=shutil.ignore_patterns("quick"))
    stored = json.loads((work / "power_sensor.json").read_text())
    (work / "power_sensor.json").unlink()
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "power_sensor.py"), "--analyse-only",
                        "--out", str(work)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    again = json.loads((work / "power_sensor.json").read_text())
    sensor = again["sensor"]
    assert sensor["counter_update_s"] == pytest.approx(0.1, rel=0.05)  # the counter's 100-ms update
    assert sensor["sample_s"] == pytest.approx(0.02, rel=0.05)  # the driver's 50 samples/s
    target = again["target"]
    assert target["setting"] == "p20ms-d25" and target["window_s"] == 8.0
    assert target["model"]["cv_pct"] <= 3.0 and abs(target["model"]["bias_pct"]) <= 5.0
    assert target["met"] is True
    # the same traces give the same figures as when they were recorded
    assert target["model"]["cv_pct"] == pytest.approx(stored["target"]["model"]["cv_pct"], rel=1e-6)
    assert target["model"]["bias_pct"] == pytest.approx(stored["target"]["model"]["bias_pct"], rel=1e-6)
