"""time-to-accuracy end to end on CPU: the study's sheet (smoke-sized cifar_cnn, --device cpu,
2 of its 5 repeats) through the real CLI into a real SQLite store, NVML doubles for the GPU readings,
then ``radtrack report --study time-to-accuracy``."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from studies_support import cpu_sheet  # noqa: E402
from support import radtrack_cli, report_here  # noqa: E402

# a launch of smoke-sized torch scripts: minutes on a small, shared CPU
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]



def test_time_to_accuracy_sheet_and_report(store, tmp_path, monkeypatch, capsys):
    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "scenario.json", [{
        "uuid": H100_UUID, "watts": 300.0, "mps_server_sm": None,
        "procs": [{"match": "cifar_cnn.py", "sm": 10, "mem_mib": 300}]}])
    sheet = cpu_sheet("time-to-accuracy", tmp_path / "tta.csv", workloads={1, 2},
                      replace={"4000": "500", "100": "8"}, listeners="smi", interval=0.5)
    p = radtrack_cli(str(sheet), env=env, timeout=500)
    assert p.returncode == 0, p.stderr[-3000:]

    out = tmp_path / "tta.csv.out.csv"
    p = report_here(monkeypatch, capsys, "time-to-accuracy", "--study", "time-to-accuracy",
                    "--format", "csv", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "Time to val_acc >= 0.92 per run" in p.stdout
    runs = pd.read_csv(out)
    summary = pd.read_csv(out.with_name("tta.csv.out.summary.csv"))
    series = pd.read_csv(out.with_name("tta.csv.out.utilisation.csv"))
    assert len(runs) == 2 and (runs["status"] == "FINISHED").all()
    # each run stopped at the first epoch that reached the target (--target-accuracy)
    assert (runs["last_val_acc"] >= 0.92).all()
    assert runs["time_to_target_s"].notna().all()
    assert (runs["time_to_target_s"] <= runs["duration_s"]).all()
    # the same seed on a CPU: every repeat learns identically, so they reach it at one step
    assert runs["time_to_target_step"].nunique() == 1
    assert summary.loc[0, "runs"] == 2 and summary.loc[0, "reached"] == 2
    assert summary.loc[0, "gpu"] == "NVIDIA H100 80GB HBM3"
    times = runs["time_to_target_s"]
    assert summary.loc[0, "time_to_target_s_mean"] == pytest.approx(times.mean())
    assert summary.loc[0, "time_to_target_s_cv"] == pytest.approx(times.std(ddof=1) / times.mean())
    # the doubles report 0 % GPU utilisation: the first-3-minutes mean and the series say so
    assert runs["gpu_util_pct_first_3min"].tolist() == [0.0, 0.0]
    assert list(series.columns) == ["seconds", *runs["run_name"]]
    assert (series.drop(columns="seconds").fillna(0) == 0).all().all()

    # a stricter target from the command line: nobody reaches 1.01
    p = report_here(monkeypatch, capsys, "time-to-accuracy", "--study", "time-to-accuracy",
                    "--target", "val_acc=1.01", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert '"reached":0' in p.stdout.replace(" ", "")
    p = report_here(monkeypatch, capsys, "time-to-accuracy", "--study", "time-to-accuracy",
                    "--target", "top1=0.5")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == (
        "radtrack report: no run of experiment 'time-to-accuracy' logged 'top1'; give the "
        "accuracy metric with --target METRIC=VALUE")
