"""A sheet in radT's published format (padded cells, MPS and MIG rows, radT's listener
names) with a radT-style script and radT's flags, on a simulated GPU host (tests/doubles)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).parents[1] / "doubles"))
from fakehost import SECOND_UUID, FakeHost, gpu  # noqa: E402
from support import radtrack_cli  # noqa: E402

SCRIPTS = Path(__file__).parents[1] / "scripts"
THIRD_UUID = "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789"

# Laid out as radT's examples/csv/experiment_collocation.csv: right-aligned padded cells,
# padded header names, empty Status/Run cells of a few blanks, MPS and MIG-profile rows.
# radT's MIG example names an A100 profile (3g.20gb); the simulated GPUs are H100s.
RADT_SHEET = """\
Experiment,Workload,Status,Run,Devices,Collocation,    File,    Listeners,Params
         1,       1,      ,   ,      0,          -,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       2,      ,   ,      0,          -,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       2,      ,   ,      1,          -,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       3,      ,   ,      0,        MPS,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       3,      ,   ,      0,        MPS,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       4,      ,   ,      2,    3g.40gb,radt_style.py,smi+top+dcgmi,--epochs 6
         1,       4,      ,   ,      2,    3g.40gb,radt_style.py,smi+top+dcgmi,--epochs 6
"""


@pytest.fixture
def gpu_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    return FakeHost(tmp_path, monkeypatch, gpus=[gpu(0), gpu(1, SECOND_UUID),
                                                 gpu(2, THIRD_UUID, mig_mode="Enabled")])


def test_radt_sheet_plans_without_a_warning(store: str, tmp_path: Path, gpu_host: FakeHost) -> None:
    shutil.copy(SCRIPTS / "radt_style.py", tmp_path)
    sheet = tmp_path / "experiment_collocation.csv"
    sheet.write_text(RADT_SHEET)
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    for text in ("workload 1-1 ", "workload 1-4 ", "start MPS control daemon for GPU 0",
                 "create MIG instance 3g.40gb on GPU 2", "listeners: smi+top+dcgm"):
        assert text in p.stdout, p.stdout
    assert gpu_host.argvs(changing_only=True) == []  # planning changed no GPU


@pytest.mark.slow
def test_radt_sheet_runs_with_radt_flags(store: str, tmp_path: Path, gpu_host: FakeHost) -> None:
    shutil.copy(SCRIPTS / "radt_style.py", tmp_path)
    sheet = tmp_path / "experiment_collocation.csv"
    sheet.write_text(RADT_SHEET)
    p = radtrack_cli("-i", "2", "--local", str(sheet), cwd=tmp_path, timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr
    c = MlflowClient(store)
    exp = c.get_experiment_by_name("1")
    rows = [r for r in c.search_runs([exp.experiment_id])
            if r.data.tags.get("radtrack.role") == "row"]
    assert len(rows) == 7 and {r.info.status for r in rows} == {"FINISHED"}
    for r in rows:
        assert r.data.tags["radtrack.stopped_by"] == "max_epoch"  # -i 2
        assert sorted(h.step for h in c.get_metric_history(r.info.run_id, "Metric A")) == [0, 1, 2]
        # dcgmi is radT's name for dcgm; without NVML here smi and dcgm are unavailable, a state
        assert r.data.params["listeners"] == "top"
        assert r.data.tags["radtrack.listener.dcgm"].startswith("unavailable")
        assert r.data.tags["radtrack.listener.smi"].startswith("unavailable")
    colloc = sorted(r.data.tags["radtrack.collocation"] for r in rows)
    assert colloc == ["-", "-", "-", "3g.40gb", "3g.40gb", "mps", "mps"]
    assert gpu_host.state["mig"] == []  # the MIG instances radtrack made are gone again
    assert any("quit" in (call.get("stdin") or "") for call in gpu_host.calls("nvidia-cuda-mps-control"))
    lines = sheet.read_text().splitlines()
    assert lines[0] == RADT_SHEET.splitlines()[0]
    for before, after in zip(RADT_SHEET.splitlines()[1:], lines[1:], strict=True):
        cells = after.split(",")
        assert cells[2].strip().startswith("FINISHED 1-") and len(cells[3].strip()) == 32
        assert cells[4:] == before.split(",")[4:]  # every other cell as it was
