"""Code windows: the script-side recorder, the join with the series (known answers), and
end to end through the real launcher with NVML doubles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.attribution import GpuUse, account
from radtrack.postrun.window_energy import window_table
from radtrack.script.codewindows import WindowRecorder, read_windows

T0 = 1_700_000_000.0
GPU = "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _constant(watts: float, seconds: float = 10.0, dt: float = 0.1) -> GpuUse:
    tp = T0 + np.arange(0, seconds + dt / 2, dt)
    tc = np.union1d(T0 + np.arange(0, seconds, 5.0), [T0 + seconds])
    return GpuUse("r", GPU, "plain", T0, T0 + seconds,
                  {"power_w": (tp, np.full(len(tp), watts)), "energy_j": (tc, watts * (tc - T0)),
                   "proc_sm_util_pct": (T0 + np.arange(1, seconds + 1), np.full(int(seconds), 50.0))})


def test_a_window_over_200_w_for_3_s_is_600_j_nested_and_overlapping_too():
    use = _constant(200.0)
    accounts = account([use], T0, T0 + 10)
    windows = [{"name": "outer", "step": None, "start": T0 + 1, "end": T0 + 4},
               {"name": "inner", "step": 0, "start": T0 + 2, "end": T0 + 2.5},
               {"name": "overlap", "step": None, "start": T0 + 3, "end": T0 + 6.25},
               {"name": "tiny", "step": None, "start": T0 + 7, "end": T0 + 7.02}]
    table = window_table(windows, "r", {"gpu0": use}, {}, accounts).set_index("name")
    assert table.loc["outer", "gpu_energy_j"] == pytest.approx(600.0)
    assert table.loc["outer", "energy_j"] == pytest.approx(600.0)  # solo: the whole GPU
    assert table.loc["outer", "power_w"] == pytest.approx(200.0)
    assert table.loc["inner", "gpu_energy_j"] == pytest.approx(100.0)
    assert table.loc["overlap", "gpu_energy_j"] == pytest.approx(650.0)  # across a counter read
    assert table.loc["tiny", "below_resolution"]
    assert np.isnan(table.loc["tiny", "gpu_energy_j"])  # flagged, not faked
    assert not table.loc["outer", "below_resolution"]


def test_attributed_energy_of_a_window_on_a_shared_gpu():
    a, b = _constant(400.0), _constant(400.0)
    b.run = "s"
    b.readings = {**b.readings, "proc_sm_util_pct": (b.readings["proc_sm_util_pct"][0], np.full(10, 150.0))}
    accounts = account([a, b], T0, T0 + 10)  # a 50 %, s 150 %: a gets a quarter
    table = window_table([{"name": "e", "step": 0, "start": T0 + 2, "end": T0 + 5.5}], "r",
                         {"gpu0": a}, {}, accounts)
    assert table.loc[0, "gpu_energy_j"] == pytest.approx(1400.0)
    assert table.loc[0, "energy_j"] == pytest.approx(350.0)


def test_recorder_nests_checks_and_closes_open_windows(tmp_path):
    rec = WindowRecorder(tmp_path / "w.jsonl")
    with rec.window("epoch", step=0):
        rec.begin("load")
        rec.end("load")
    rec.begin("left-open")
    with pytest.raises(ValueError, match="already open"):
        rec.begin("left-open")
    with pytest.raises(ValueError, match="was not opened"):
        rec.end("never")
    with pytest.raises(ValueError, match="window name"):
        rec.begin("bad/name")
    with pytest.raises(ValueError, match="window step"):
        rec.begin("epoch", step=-1)
    rec.close_all()
    got = read_windows(tmp_path / "w.jsonl")
    assert [(w["name"], w["step"]) for w in got] == [("load", None), ("epoch", 0), ("left-open", None)]
    assert got[-1]["open_at_end"] is True
    assert got[1]["start"] <= got[0]["start"] <= got[0]["end"] <= got[1]["end"]


def test_outside_radtrack_windows_do_nothing_and_import_no_mlflow(tmp_path):
    code = ("import sys, runpy; sys.argv=['x', '--seconds', '0.01']; "
            f"runpy.run_path({str(SCRIPTS / 'window_epochs.py')!r}, run_name='__main__'); "
            "print('mlflow' in sys.modules)")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("RADTRACK_", "MLFLOW_RUN"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_windows_end_to_end_through_the_launcher(store, tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
    import nvml_scenario
    from fakehost import H100_UUID, FakeHost
    from mlflow import MlflowClient
    from support import radtrack_cli

    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "s.json", [{"uuid": H100_UUID, "watts": 300.0,
                              "procs": [{"match": "--tag w", "sm": 60, "mem_mib": 800}]}])
    p = radtrack_cli("-e", "win", "-d", "0", "-l", "smi", "--interval", "0.1",
                     str(SCRIPTS / "window_epochs.py"), "--seconds", "1", env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "code window(s) stored" in p.stderr
    client = MlflowClient(store)
    run = next(r for r in client.search_runs([client.get_experiment_by_name("win").experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    epochs = client.get_metric_history(run.info.run_id, "window/epoch/energy_j")
    assert sorted(m.step for m in epochs) == [0, 1, 2]
    evals = client.get_metric_history(run.info.run_id, "window/eval/gpu_energy_j")
    assert len(evals) == 3
    table = pd.read_parquet(client.download_artifacts(run.info.run_id, "windows/windows.parquet",
                                                      str(tmp_path)))
    ep = table[table["name"] == "epoch"].sort_values("start")
    span = (ep["start"].min(), ep["end"].max())
    # the epochs' energies sum to the run's energy over the same span (within 2 %)
    smi = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/smi.parquet", str(tmp_path)))
    counter = smi[["time", "smi/gpu0/energy_j"]].dropna()
    run_j = float(np.diff(np.interp(span, counter["time"], counter["smi/gpu0/energy_j"]))[0])
    assert ep["gpu_energy_j"].sum() == pytest.approx(run_j, rel=0.02)
    assert ep["energy_j"].sum() == pytest.approx(run_j, rel=0.02)  # alone on the GPU
    assert ((ep["duration_s"] > 0.95) & (ep["duration_s"] < 3.0)).all()  # 1 s of sleep + logging
    assert ep["power_w"].to_numpy() == pytest.approx(300.0, rel=0.05)
    tiny = table[table["name"] == "tiny"].iloc[0]
    assert tiny["below_resolution"] and np.isnan(tiny["gpu_energy_j"])
    assert "window/tiny/energy_j" not in run.data.metrics
    assert run.data.metrics["window/tiny/below_resolution_flag"] == 1.0
    assert json.loads(json.dumps(list(table["name"].unique()))) == ["warmup", "eval", "epoch", "tiny"]
