"""A third-party power source feeds every energy figure with no change outside its own files.

tests/plugin's ``loadmeter`` listener declares ``loadmeter/meter0/power_w`` as a whole
device's power (role ``device_power``, scope ``device``, W). Installed into a temporary
folder and run through the CLI on a real SQLite store, with no GPU, its runs get the
summary's ``energy_j`` and ``power_w`` columns, co-location attribution of the device's
energy between two rows sharing it, code-window energy and a CO2e footprint, each
checked against the integral of the power series the run stored.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import radtrack_cli

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "plugin"
SCRIPTS = ROOT / "scripts"
KEY = "loadmeter/meter0/power_w"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, root / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(root / "site"),
                           str(root / "src")], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return root / "site"


def _env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
            "MLFLOW_DISABLE_TELEMETRY": "true"}


def _figures(site: Path, experiment: str) -> dict[str, dict]:
    """run name -> its summary row, metrics, and stored power series, read in a process
    that sees the plugin (as `radtrack report` would)."""
    code = f"""
import json, math
from mlflow import MlflowClient
from radtrack.analysis.data import load_runs
from radtrack.analysis.run_summaries import summarize_runs
runs = load_runs({experiment!r})
table = summarize_runs(runs).set_index("run_id")
client = MlflowClient()
out = {{}}
for run_id, name in zip(runs["run_id"], runs["run_name"]):
    row = {{k: (v if isinstance(v, (int, float)) and math.isfinite(v) else None)
           for k, v in table.loc[run_id].items() if isinstance(v, (int, float))}}
    history = client.get_metric_history(run_id, "system/{KEY}")
    out[name] = {{"summary": row, "metrics": client.get_run(run_id).data.metrics,
                  "tags": client.get_run(run_id).data.tags,
                  "power": [[m.timestamp / 1000, m.value] for m in history]}}
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, **_env(site)},
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _integral(power: list[list[float]]) -> float:
    t, w = np.array(power).T
    order = np.argsort(t)
    return float(np.trapezoid(w[order], t[order]))


def test_a_plugin_power_source_gets_energy_power_windows_and_co2e(store, site):
    p = radtrack_cli("-e", "meter", "-l", "loadmeter", "--interval", "0.1",
                     "--carbon-intensity", "400", "--run-name", "solo",
                     str(SCRIPTS / "window_epochs.py"), "--seconds", "0.6", env=_env(site))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    run = _figures(site, "meter")["solo"]
    measured = _integral(run["power"])
    assert measured > 0
    summary, metrics = run["summary"], run["metrics"]
    # the summary's energy and power, by the declared role alone
    assert summary["gpu_energy_j"] == pytest.approx(measured, rel=0.02)
    assert summary["energy_j"] == pytest.approx(measured, rel=0.02)  # solo: the whole device
    assert summary["power_w_mean"] == pytest.approx(metrics[f"summary/{KEY}/mean"], rel=1e-6)
    # the end of the workload accounted the device like a GPU, and priced it
    assert metrics["summary/attribution/meter0/energy_j"] == pytest.approx(measured, rel=0.02)
    assert metrics["summary/co2e_g"] == pytest.approx(
        metrics["summary/attribution/meter0/energy_j"] / 3.6e6 * 400, rel=1e-6)
    # code windows: each epoch's energy is the integral of the power over the epoch
    epochs = [v for k, v in metrics.items() if k == "window/epoch/gpu_energy_j"]
    assert epochs and all(v > 0 for v in epochs)
    assert metrics["window/epoch/power_w"] == pytest.approx(
        metrics["window/epoch/gpu_energy_j"] / metrics["window/epoch/duration_s"], rel=1e-6)


def test_two_rows_sharing_a_plugin_device_are_attributed_its_energy(store, site, tmp_path):
    sheet = tmp_path / "meter.csv"
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,RunName\n"
                     f"shared,1,-,-,{SCRIPTS / 'window_epochs.py'},loadmeter,--seconds 0.5,0.1,a\n"
                     f"shared,1,-,-,{SCRIPTS / 'window_epochs.py'},loadmeter,--seconds 0.5,0.1,b\n")
    p = radtrack_cli(str(sheet), env=_env(site))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    runs = _figures(site, "shared")
    a, b = runs["a"], runs["b"]
    assert a["metrics"]["summary/attribution/meter0/energy_j"] > 0
    assert b["metrics"]["summary/attribution/meter0/energy_j"] > 0
    assert a["tags"]["radtrack.attribution.meter0"] == "held-time"
    # each row's energy is its share, not the whole device's counted once per row
    for run in (a, b):
        assert run["summary"]["energy_j"] == pytest.approx(
            run["metrics"]["summary/attribution/meter0/energy_j"], rel=1e-6)
        assert run["summary"]["energy_j"] < run["summary"]["gpu_energy_j"]
