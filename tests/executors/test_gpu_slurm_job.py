"""On a real NVIDIA GPU: the SLURM executor's batch script, run as slurmd would run it (no
SLURM needed: the job's environment is what SLURM sets), with an MPS pair: Devices index 0
of the allocation is the GPU in CUDA_VISIBLE_DEVICES, the job has its own MPS daemon with
its pipe and log folders under the job's node-local run folder, and nothing is left
running."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import REPO

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(shutil.which("nvidia-cuda-mps-control") is None, reason="no MPS control binary")
def test_batch_script_runs_an_mps_pair_on_the_allocated_gpu(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from radtrack.executors.slurm import batch_script
    from radtrack.plan import group_workloads
    from radtrack.sheet import read_sheet

    sheet = tmp_path / "job.csv"
    sgemm = REPO / "workloads" / "sgemm.py"
    args = "--steps 1000 --size 4096 --log-every 500"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"slurmgpu,1,,,0,MPS,{sgemm},smi+top,{args}\n"
                     f"slurmgpu,1,,,0,MPS:50,{sgemm},smi+top,{args}\n")
    [rows] = group_workloads(read_sheet(sheet, check_host=False))
    script = tmp_path / "job.py"
    script.write_text(batch_script(rows, store, 5.0, str(tmp_path / "node")))
    script.chmod(0o700)
    gpu = os.environ.get("RADTRACK_TEST_GPU", "0")  # the GPU "SLURM allocated"
    env = {**os.environ, "SLURM_JOB_ID": "777", "CUDA_VISIBLE_DEVICES": gpu,
           "SLURM_JOB_GPUS": gpu}
    p = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "job 777" in p.stderr and f"GPUs {gpu}" in p.stderr

    c = MlflowClient(store)
    runs = c.search_runs([c.get_experiment_by_name("slurmgpu").experiment_id])
    rows_ = [r for r in runs if r.data.tags["radtrack.role"] == "row"]
    parent = next(r for r in runs if r.data.tags["radtrack.role"] == "workload")
    assert len(rows_) == 2 and all(r.info.status == "FINISHED" for r in rows_)
    for r in rows_:
        assert r.data.tags["radtrack.slurm.job_id"] == "777"
        assert r.data.tags["radtrack.devices"] == gpu
        assert r.data.metrics["throughput_tflops"] > 1
    # the job's own MPS daemon lived under the job's node-local run folder
    mps = tmp_path / "node" / "runs" / parent.info.run_id / "mps"
    assert (mps / f"gpu{gpu}" / "log").is_dir(), list(mps.rglob("*"))
    assert [a.path for a in c.list_artifacts(parent.info.run_id, "placement")]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in ps, "a process of the job was left running"
