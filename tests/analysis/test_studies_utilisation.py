"""multi-level-utilisation end to end on CPU: part of the study's sheet (smoke-sized cifar_cnn
in fp32 and bf16, --device cpu) through the real CLI, with NVML doubles whose GPM
readings are the H100's recorded ones, then ``radtrack report --study``."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from gpu_doubles import H100_GPM  # noqa: E402
from studies_support import cpu_sheet  # noqa: E402
from support import radtrack_cli, report_here  # noqa: E402

# a launch of smoke-sized torch scripts: minutes on a small, shared CPU
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]



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
