"""multi-level-utilisation end to end on CPU: part of the study's sheet (smoke-sized cifar_cnn
in fp32 and bf16, --device cpu) through the real CLI, with NVML doubles whose GPM
readings are the H100's recorded ones, then ``radtrack report --study``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from gpu_doubles import H100_GPM  # noqa: E402
from studies_support import cpu_sheet  # noqa: E402
from support import radtrack_cli  # noqa: E402

# a launch of smoke-sized torch scripts: minutes on a small, shared CPU
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def report_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                *args: str) -> subprocess.CompletedProcess[str]:
    """``radtrack report ARGS`` through the CLI's entry point (radtrack.cli.main, what
    ``python -m radtrack`` runs) in this process: no interpreter start and MLflow import
    per call. What the CLI sets process-wide (argparse's error hook, two MLflow
    variables) is undone after the test."""
    from radtrack.cli import main

    monkeypatch.setattr(argparse.ArgumentParser, "error", argparse.ArgumentParser.error)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    capsys.readouterr()
    try:
        code = main(["report", *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["radtrack", "report", *args], code, out.out, out.err)


def test_levels_sheet_and_report(store, tmp_path, monkeypatch, capsys):
    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "scenario.json", [{
        "uuid": H100_UUID, "watts": 300.0, "mps_server_sm": None, "procs": []}])
    sheet = cpu_sheet("multi-level-utilisation", tmp_path / "levels.csv", workloads={9, 10},
                      replace={"10000": "200", "50": "2"}, interval=0.5)
    p = radtrack_cli(str(sheet), env=env, timeout=500)
    assert p.returncode == 0, p.stderr[-3000:]

    out = tmp_path / "levels-out.parquet"
    p = report_here(monkeypatch, capsys, "multi-level-utilisation", "--study",
                    "multi-level-utilisation", "--format", "parquet", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "GPU utilisation vs SM active, occupancy, tensor and DRAM activity" in p.stdout
    table = pd.read_parquet(out)
    # sorted by script and dtype, not in launch order (fp32 ran first)
    assert list(zip(table["script"], table["dtype"], table["workload"], strict=True)) == [
        ("cifar_cnn", "bf16", 10), ("cifar_cnn", "fp32", 9)]
    assert (table["gpu"] == "gpu0").all() and (table["status"] == "FINISHED").all()
    # known answers: GPM metrics 2, 3, 5, 10 of the doubles (the H100's recorded bf16
    # matmul second) and NVML's utilisation, which the doubles keep at 0 %
    assert table["sm_active_pct"].tolist() == pytest.approx([H100_GPM[2]] * 2, rel=1e-6)
    assert table["sm_occupancy_pct"].tolist() == pytest.approx([H100_GPM[3]] * 2, rel=1e-6)
    assert table["tensor_active_pct"].tolist() == pytest.approx([H100_GPM[5]] * 2, rel=1e-6)
    assert table["dram_active_pct"].tolist() == pytest.approx([H100_GPM[10]] * 2, rel=1e-6)
    assert table["gpu_util_pct"].tolist() == [0.0] * 2
    assert table["util_over_sm_active"].tolist() == [0.0] * 2
    assert (table["throughput_metric"] == "throughput_samples_per_s").all()
    assert (table["throughput"] > 0).all()
