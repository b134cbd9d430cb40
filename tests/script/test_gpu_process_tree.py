"""On GPUs: ``torchrun --nproc_per_node 2`` with NCCL under ``radtrack -l smi+top``, rank 0
logging its run: that run, made in a rank two processes below the script (the script, the
elastic agent, the rank), gets the row's GPU telemetry of its span and the links to the row
(docs/mlflow-code.md, "Every process of the script"). One rank per GPU where there are two
or more GPUs (both given to the row); two ranks on GPU 0 where there is one (NCCL refuses
two ranks on one GPU: their all-reduce then goes through gloo on CUDA tensors)."""

from __future__ import annotations

import pytest
from support import radtrack_cli
from test_mlflow_code import Store
from test_process_tree import TREE, assert_bound, bound_runs, existing_store

pytestmark = pytest.mark.gpu


def _gpus() -> int:
    import pynvml

    pynvml.nvmlInit()
    try:
        return pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()


def test_torchrun_nccl_rank_zero_run_gets_the_rows_gpu_telemetry(tmp_path) -> None:
    gpus = min(_gpus(), 2)
    devices = "+".join(str(i) for i in range(gpus))
    uri = existing_store(tmp_path)
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(tmp_path / ".radtrack"),
           "MLFLOW_DISABLE_TELEMETRY": "true", "STEPS": "120"}
    proc = radtrack_cli("-e", "tree", "-d", devices, "-l", "smi+top", "--interval", "0.1",
                        str(TREE / "torchrun_job.py"), "--backend", "nccl", cwd=tmp_path, env=env,
                        timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    s = Store(uri)
    row = s.named("tree-1 A")
    (run,) = bound_runs(s, row)
    assert run.info.run_name == "torchrun-rank0" and run.data.tags["radtrack.rank"] == "0"
    assert_bound(s, run, row)
    assert run.data.tags["radtrack.listener.smi"] == "ok"
    for gpu in range(gpus):  # rank 0's run holds every GPU of the row, not only its own
        power = s.system(run, f"system/smi/gpu{gpu}/power_w")
        assert power and all(p.value > 0 for p in power), gpu
        assert min(p.timestamp for p in power) >= run.info.start_time
        assert run.data.metrics[f"summary/smi/gpu{gpu}/power_w/mean"] > 0
    util = s.system(run, "system/smi/gpu0/gpu_util_pct")
    assert util and max(p.value for p in util) > 0  # the ranks' load, seen on the run
    assert "telemetry bound to the script's run(s): torchrun-rank0" in proc.stderr
