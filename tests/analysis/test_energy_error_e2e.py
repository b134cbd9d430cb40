"""Energy error bars end to end (issue 30): the real CLI and launcher, a real SQLite store and
the NVML doubles (tests/doubles/nvml_scenario.py) standing for two H100s at 300 W, GPU 0
under a steady load (NVML utilisation 100 %), GPU 1 under a bursty one (25 %: busy a
quarter of the time, what a small-batch training loop with gaps looks like to NVML), and an
H200 (GPU 2) under the same bursty load: its sensor constants are the H200's (issue 51). The
run's, the code windows' and the attributed share's intervals are stored next to their
energies, and ``radtrack report`` shows them and flags the bursty run with its reason.
One launch (a sheet of three rows) serves every test."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu  # noqa: E402
from support import radtrack_cli, report_here  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SCRIPT = SCRIPTS / "window_epochs.py"
TRIAL = SCRIPTS / "mlflow_code" / "steady_trial.py"
pytestmark = pytest.mark.slow
H200, H200_UUID = "NVIDIA H200", "GPU-62de6b15-391a-cce8-82dd-aae63626a2b2"  # the H200 of issue 51



@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Experiment 'err': window_epochs.py steady on GPU 0 (workload 1), then bursty on GPU 1
    (workload 2); experiment 'err-trial': steady_trial.py, a run the script opens itself, on
    bursty GPU 1. smi every 0.1 s. Yields the launcher's stderr; the store is this module's."""
    tmp = tmp_path_factory.mktemp("energy-error")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp / 'mlflow.db'}")
        mp.setenv("RADTRACK_HOME", str(tmp / ".radtrack"))
        mp.chdir(tmp)
        FakeHost(tmp, mp, gpus=[gpu(0), gpu(1, SECOND_UUID), gpu(2, H200_UUID, name=H200)])

        def procs(*tags: str) -> list[dict[str, object]]:
            return [{"match": f"--tag {t}", "sm": 60, "mem_mib": 800} for t in tags]

        env = nvml_scenario.write(tmp / "scenario.json", [
            {"uuid": H100_UUID, "watts": 300.0, "util_gpu": 100.0, "power_ring": True,
             "procs": procs("steady")},
            {"uuid": SECOND_UUID, "watts": 300.0, "util_gpu": 25.0, "power_ring": True,
             "procs": procs("bursty", "trial")},
            {"uuid": H200_UUID, "name": H200, "watts": 300.0, "util_gpu": 25.0, "power_ring": True,
             "procs": procs("h200")}])
        (tmp / "err.csv").write_text(
            "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
            f"err,1,,,0,-,{SCRIPT},smi,--seconds 1 --tag steady,0.1\n"
            f"err,2,,,1,-,{SCRIPT},smi,--seconds 1 --tag bursty,0.1\n"
            f"err-trial,1,,,1,-,{TRIAL},smi,--seconds 2 --tag trial,0.1\n"
            f"err-h200,1,,,2,-,{SCRIPT},smi,--seconds 1 --tag h200,0.1\n")
        p = radtrack_cli(str(tmp / "err.csv"), env=env, timeout=400)
        assert p.returncode == 0, p.stderr[-3000:]
        yield p.stderr


def test_bursty_runs_get_a_wide_flagged_interval_steady_ones_a_narrow_one(launched, monkeypatch,
                                                                          capsys):
    client = MlflowClient()
    exp = client.get_experiment_by_name("err")
    rows = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("radtrack.role") == "row"]
    by_load = dict(zip(("steady", "bursty"), sorted(rows, key=lambda r: r.info.start_time), strict=True))
    steady, bursty = by_load["steady"].data.metrics, by_load["bursty"].data.metrics
    # a row's keys name its GPUs as it sees them: gpu0 in both rows
    key = "summary/smi/gpu0/energy_j"
    assert steady[key] > 0 and bursty[key] > 0  # the counter's figure is there, unchanged
    assert steady[key + "_ci95_pct"] < 5.0 and steady[key + "_ci95_flag"] == 0.0
    assert bursty[key + "_ci95_pct"] > 3 * steady[key + "_ci95_pct"]
    assert bursty[key + "_ci95_flag"] == 1.0  # bursty load near the sensor's period
    # the attributed share (alone on the GPU: all of it) carries the GPU's interval
    att = "summary/attribution/gpu0/energy_j"
    assert bursty[att + "_ci95_pct"] > steady[att + "_ci95_pct"]
    # code windows: 0.7-s epochs are under the minimum window: flagged whatever the load
    assert steady["window/epoch/energy_j_ci95_flag"] == 2.0
    assert bursty["window/epoch/gpu_energy_j_ci95_pct"] > steady["window/epoch/gpu_energy_j_ci95_pct"]
    assert "summary/energy_model/gpu0/activity_energy_j" not in bursty  # no GPM listener: no model

    p = report_here(monkeypatch, capsys, "err", "--format", "json")
    assert p.returncode == 0, p.stderr[-3000:]
    runs = {r["run_id"]: r for r in json.loads(p.stdout)["runs"]}
    b, s = runs[by_load["bursty"].info.run_id], runs[by_load["steady"].info.run_id]
    assert b["energy_j_ci95_pct"] == pytest.approx(bursty[att + "_ci95_pct"], rel=1e-6)
    assert b["energy_note"].startswith("±") and "bursty load near the sensor's period" in b["energy_note"]
    assert s["energy_note"] == "" and s["energy_j_ci95_pct"] < 5.0
    text = report_here(monkeypatch, capsys, "err")
    assert "energy_j_ci95_pct" in text.stdout and "bursty load near the sensor's period" in text.stdout
    # the experiment's measured energy line carries its interval too
    assert re.search(r"Measured GPU energy of 2 workload\(s\): [0-9.e-]+ kWh ±\d+\.\d % \(95 %\)", text.stdout)


def test_a_script_run_carries_the_interval_of_its_span(launched):
    """A run the script opened itself (docs/mlflow-code.md) gets its span's energy with its
    interval, and its share of the row's attributed energy with the GPU's interval."""
    # the launcher's energy line of that row carries the GPU energy's interval and why it is wide
    line = next(x for x in launched.splitlines() if "err-trial-1: GPU " in x and " J" in x)
    assert re.search(r" J ±\d+\.\d %, (bursty|window too short)", line), line
    client = MlflowClient()
    exp = client.get_experiment_by_name("err-trial")
    trial = next(r for r in client.search_runs([exp.experiment_id]) if r.info.run_name == "trial")
    m = trial.data.metrics
    assert trial.data.tags["radtrack.role"] == "script"
    # its share of the row's energy (the counter, read every 5 s, shaped by the power inside
    # its intervals) with the GPU's interval over the span: bursty, and a 2-s span is short
    att = "summary/attribution/gpu0/energy_j"  # GPU 1 as the row sees it
    assert m[att] > 0 and m[att + "_ci95_pct"] > 0 and m[att + "_ci95_flag"] in (1.0, 2.0)


def test_the_sensor_constants_follow_the_gpu_model_the_listener_declared(launched):
    """The same bursty load on an H200: its counter averages the whole of each 100-ms update
    (benchmarks/results/h200-2026-11-29-attribution-2), so the interval is the H200's, narrow
    and not flagged bursty, where the H100's is wide and flagged."""
    client = MlflowClient()

    def row(experiment: str, tag: str) -> dict[str, float]:
        exp = client.get_experiment_by_name(experiment)
        return next(r for r in client.search_runs([exp.experiment_id])
                    if r.data.tags.get("radtrack.role") == "row" and tag in r.data.params.get("command", "")).data.metrics

    key = "summary/smi/gpu0/energy_j"
    h100, h200 = row("err", "--tag bursty"), row("err-h200", "--tag h200")
    assert h100[key + "_ci95_flag"] == 1.0 and h200[key + "_ci95_flag"] == 0.0
    assert h200[key + "_ci95_pct"] < h100[key + "_ci95_pct"] / 3
