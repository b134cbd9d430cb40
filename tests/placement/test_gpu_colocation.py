"""On a real NVIDIA GPU: time-sharing and MPS co-location of two torch workloads, end to end
through ``python -m radtrack sheet.csv`` (MIG and clocks are covered by recorded-output
doubles only: this test never changes GPU modes)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import REPO, radtrack_cli

pytestmark = pytest.mark.gpu

SHEET = """Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval
colo,1,,,0,-,{sgemm},smi+top,--steps 2000 --size 4096 --log-every 500,0.1
colo,1,,,0,-,{sgemm},smi+top,--steps 2000 --size 4096 --log-every 500,0.1
colo,2,,,0,MPS,{sgemm},smi+top,--steps 2000 --size 4096 --log-every 500,0.1
colo,2,,,0,MPS:50,{sgemm},smi+top,--steps 2000 --size 4096 --log-every 500,0.1
"""


def _mps_daemons() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    # a <defunct> entry is an exited process its parent (here PID 1) has not reaped: not running
    return [line for line in out.splitlines()
            if "nvidia-cuda-mps" in line and "ps -eo" not in line and "<defunct>" not in line]


@pytest.mark.skipif(shutil.which("nvidia-cuda-mps-control") is None, reason="no MPS control binary")
def test_timeshare_and_mps_end_to_end(store: str, tmp_path: Path) -> None:
    sheet = tmp_path / "colo.csv"
    sheet.write_text(SHEET.format(sgemm=REPO / "workloads" / "sgemm.py"))
    before = _mps_daemons()
    p = radtrack_cli(str(sheet), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert _mps_daemons() == before, "an MPS daemon was left running"

    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("colo")
    runs = c.search_runs([exp.experiment_id])
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    parents = {r.data.tags["radtrack.workload"]: r for r in runs
               if r.data.tags.get("radtrack.role") == "workload"}
    assert len(rows) == 4 and all(r.info.status == "FINISHED" for r in rows)
    tflops = {r.info.run_name: min(h.value for h in c.get_metric_history(r.info.run_id, "throughput_tflops"))
              for r in rows}
    solo_like = max(tflops.values())
    # the time-shared pair overlapped: each got clearly less than an unshared GPU gives
    assert all(tflops[r.info.run_name] < 0.8 * 52 for r in rows
               if r.data.tags["radtrack.workload"] == "1"), tflops
    assert solo_like > 5
    for r in rows:
        m = r.data.metrics
        # per-process metrics tell the two co-located runs apart: each sees its own memory
        assert m["summary/smi/gpu0/proc_mem_used_mib/max"] > 100, r.info.run_name
        assert m["throughput_tflops"] > 1, r.info.run_name
        assert r.data.tags["radtrack.colocated_with"]
    assert float(parents["1"].data.tags["radtrack.start_skew_ms"]) < 500
    mps_rows = [r for r in rows if r.data.tags["radtrack.workload"] == "2"]
    assert {r.data.tags["radtrack.collocation"] for r in mps_rows} == {"mps", "mps:50"}
    arts = [a.path for a in c.list_artifacts(parents["2"].info.run_id, "placement")]
    assert arts, "the MPS control log is attached to the parent run"
    text = sheet.read_text()
    assert text.count("FINISHED colo-") == 4
