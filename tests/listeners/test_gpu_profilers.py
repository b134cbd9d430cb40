"""On a real NVIDIA GPU with Nsight Compute: ``-l ncu`` wraps the workload, limited to the
NVTX range ``profile`` the workloads open around a few steady-state steps, and the report
lands in the run's artifacts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import REPO, radtrack_cli

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(shutil.which("ncu") is None, reason="gpu: no ncu (Nsight Compute) on PATH")
def test_ncu_report_of_the_profile_range(store: str) -> None:
    p = radtrack_cli("-e", "prof", "-l", "ncu+smi", "--interval", "0.2",
                     str(REPO / "workloads" / "sgemm.py"), "--steps", "20", "--size", "1024",
                     "--log-every", "10", env={"RADTRACK_PROFILE_NVTX_RANGE": "profile"}, timeout=480)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("prof")
    run = next(r for r in c.search_runs([exp.experiment_id]) if r.data.tags["radtrack.role"] == "row")
    assert run.info.status == "FINISHED"
    assert run.data.tags["radtrack.listener.ncu.nvtx_range"] == "profile"
    reports = [a.path for a in c.list_artifacts(run.info.run_id, "profiles")]
    assert any(r.endswith(".ncu-rep") for r in reports), reports
    assert run.data.metrics["throughput_tflops"] > 0
    assert Path(c.download_artifacts(run.info.run_id, reports[0], str(Path.cwd()))).stat().st_size > 1000
