"""On a real NVIDIA GPU: a training workload's per-block code windows add up to the run's
energy over the same span (issue acceptance: within 2 %)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import REPO, radtrack_cli

pytestmark = pytest.mark.gpu


def test_block_windows_sum_to_the_runs_energy(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    p = radtrack_cli("-e", "gpuwin", "-d", "0", "-l", "smi+dcgm", "--interval", "0.1",
                     "--max-time", "0.7", "--carbon-intensity", "350",
                     str(REPO / "workloads" / "resnet.py"), "--batch-size", "64", "--log-every", "20",
                     timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    client = MlflowClient(store)
    run = next(r for r in client.search_runs([client.get_experiment_by_name("gpuwin").experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    table = pd.read_parquet(client.download_artifacts(run.info.run_id, "windows/windows.parquet",
                                                      str(tmp_path)))
    blocks = table[(table["name"] == "block") & ~table["open_at_end"]].sort_values("start")
    assert len(blocks) >= 3
    smi = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/smi.parquet",
                                                    str(tmp_path)))
    # Reference: the 10-Hz instantaneous power integrated over the blocks' span, a path
    # independent of the energy counter (0.15 % off it under a steady load, docs/performance.md).
    # The counter alone, read every 5 s, cannot say what fell inside a span that starts where
    # the power jumps from warm-up to training (linear interpolation was 11 % off on the H100).
    power = smi[["time", "smi/gpu0/power_w"]].dropna()
    span = (blocks["start"].min(), blocks["end"].max())
    t = np.concatenate(([span[0]], power["time"][(power["time"] > span[0]) & (power["time"] < span[1])],
                        [span[1]]))
    run_j = float(np.trapezoid(np.interp(t, power["time"], power["smi/gpu0/power_w"]), t))
    assert blocks["gpu_energy_j"].sum() == pytest.approx(run_j, rel=0.02)
    assert blocks["energy_j"].sum() == pytest.approx(run_j, rel=0.02)  # alone on the GPU
    assert (blocks["power_w"] > 100).all() and (blocks["sm_active_pct"] > 0).all()
    history = client.get_metric_history(run.info.run_id, "window/block/energy_j")
    assert sorted(m.step for m in history)[:3] == [1, 2, 3]
    assert run.data.metrics["summary/co2e_g"] == pytest.approx(
        run.data.metrics["summary/attribution/gpu0/energy_j"] / 3.6e6 * 350)
