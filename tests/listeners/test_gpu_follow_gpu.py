"""On a host with two or more NVIDIA GPUs: a row given GPU 0 whose script runs its work on
GPU 1 (a torch child with the row's CUDA_VISIBLE_DEVICES removed) gets GPU 1 followed by
its smi (radtrack/listeners/gpu_follow.py), with its power, energy and the run's share of it,
through the real CLI. Skips visibly on fewer GPUs or without torch; changes no GPU setting."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from support import radtrack_cli


def _gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_gpu_count() < 2, reason=f"needs two GPUs, this host has {_gpu_count()}")]
WORK_S = 15.0
TAG = "radtrack.listener.smi.gpu1"


def test_a_row_on_gpu0_whose_script_uses_gpu1_gets_gpu1_followed(store: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from mlflow import MlflowClient

    script = tmp_path / "elsewhere.py"
    script.write_text(textwrap.dedent(f"""
        import os, subprocess, sys
        env = dict(os.environ)
        env.pop("CUDA_VISIBLE_DEVICES", None)  # the row was given GPU 0; the child takes GPU 1
        work = '''
        import time, torch
        d = torch.device("cuda:1")
        a = torch.randn(4096, 4096, device=d)
        t = time.time()
        while time.time() - t < {WORK_S}:
            a = a @ a
            a = a / a.norm()
        torch.cuda.synchronize(d)
        '''
        subprocess.run([sys.executable, "-c", work], env=env, check=True)
    """))
    p = radtrack_cli("-d", "0", "-l", "smi", "--interval", "0.5", str(script), cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    c = MlflowClient(store)
    exp = c.get_experiment_by_name("Default")
    runs = c.search_runs([exp.experiment_id])
    run = next(r for r in runs if r.data.tags.get("radtrack.role") == "row")
    parent = next(r for r in runs if r.data.tags.get("radtrack.role") == "workload")
    assert run.info.status == "FINISHED"
    tags, m = run.data.tags, run.data.metrics
    host = tags["radtrack.gpu.uuids"].split(",")
    assert tags["radtrack.listener.smi.gpu0.uuid"] == host[0]  # the row's own GPU
    assert tags[f"{TAG}.uuid"] == host[1] and tags[f"{TAG}.nvml_index"] == "1", tags
    start, end = run.info.start_time / 1000, run.info.end_time / 1000
    followed = float(tags[f"{TAG}.followed"])
    assert start < followed < end - 2, (start, followed, end)
    # GPU 1's readings from the follow on: power, the energy counter, the run's memory there
    assert "system/smi/gpu1/power_w" in m
    assert m["summary/smi/gpu1/energy_j"] > 50.0 * (end - followed), m["summary/smi/gpu1/energy_j"]
    memory = c.get_metric_history(run.info.run_id, "system/smi/gpu1/proc_mem_used_mib")
    assert max(x.value for x in memory) > 100  # the torch child's context on GPU 1
    # accounted: the run's share of GPU 1 from the follow on, and GPU 1 closes
    assert tags["radtrack.attribution.gpu1"] and m["summary/attribution/gpu1/energy_j"] > 0
    w = parent.data.metrics
    label = next(k.split(".")[2] for k, v in parent.data.tags.items()
                 if k.startswith("radtrack.attribution.gpu") and k.endswith(".uuid") and v == host[1])
    parts = (m["summary/attribution/gpu1/energy_j"] + w[f"summary/workload/{label}/idle_energy_j"]
             + w[f"summary/workload/{label}/other_energy_j"])
    assert parts == pytest.approx(w[f"summary/workload/{label}/energy_j"], rel=0.01)
