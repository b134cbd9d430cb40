"""On a host with two or more NVIDIA GPUs (issue 29): co-location accounting per GPU, a row
on two GPUs, and a data-parallel run across both, through the real CLI. Skips visibly on
fewer GPUs; never changes a GPU setting; radtrack quits the MPS daemons it starts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from support import REPO, radtrack_cli


def _gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_gpu_count() < 2, reason=f"needs two GPUs, this host has {_gpu_count()}")]
SGEMM = REPO / "workloads" / "sgemm.py"
PARAMS = "--steps 100000 --size 4096 --log-every 200"  # stopped by MaxTime (0.25 min)


def _runs(store: str, experiment: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(store)
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=200)


def _closes_per_gpu(parent, rows: list) -> None:
    """Per GPU of the workload: its rows' attributed energy + idle + other = the GPU's
    measured energy (within 1 %), and only rows on that GPU are charged for it."""
    m, tags = parent.data.metrics, parent.data.tags
    labels = sorted({k.split("/")[2] for k in m if k.startswith("summary/workload/gpu")
                     and k.endswith("/energy_j") and k.count("/") == 3})
    assert labels, m
    for label in labels:
        uuid = tags[f"radtrack.attribution.{label}.uuid"]
        charged = 0.0
        for r in rows:
            mine = [k.split(".")[2] for k, v in r.data.tags.items()
                    if k.startswith("radtrack.attribution.gpu") and k.endswith(".gpu") and v == uuid]
            for own in mine:
                charged += r.data.metrics[f"summary/attribution/{own}/energy_j"]
        total = (charged + m[f"summary/workload/{label}/idle_energy_j"]
                 + m[f"summary/workload/{label}/other_energy_j"])
        assert total == pytest.approx(m[f"summary/workload/{label}/energy_j"], rel=0.01), (label, uuid)


def _own_gpus(run) -> set[str]:
    """The UUIDs of the GPUs the row's smi listener read (``radtrack.listener.smi.gpu<i>.uuid``:
    the row's own GPUs; ``radtrack.gpu.uuids`` lists the whole host's)."""
    tags = run.data.tags
    return {v for k, v in tags.items() if k.startswith("radtrack.listener.smi.gpu") and k.endswith(".uuid")}


def _sheet_gpus(run) -> set[str]:
    """The UUIDs of the row's Devices cell ("1", "0+1"), looked up in the host's GPU list."""
    host = run.data.tags["radtrack.gpu.uuids"].split(",")
    return {host[int(d)] for d in run.data.tags["radtrack.devices"].split("+")}


@pytest.mark.skipif(shutil.which("nvidia-cuda-mps-control") is None, reason="no MPS control binary")
def test_rows_on_two_gpus_are_charged_only_their_own_gpu(store: str, tmp_path: Path) -> None:
    rows = [(1, "0", "-"), (1, "1", "-"),  # two solo rows at once, one per GPU
            (2, "0", "-"), (2, "0", "-"), (2, "1", "-"),  # a time-shared pair beside a solo row
            (3, "1", "MPS"), (3, "1", "MPS"),  # an MPS pair on GPU 1
            (4, "0+1", "-")]  # one row on both GPUs
    lines = ["Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval,MaxTime"]
    lines += [f"two,{w},,,{d},{c},{SGEMM},smi+top,{PARAMS},0.1,0.25" for w, d, c in rows]
    sheet = tmp_path / "two.csv"
    sheet.write_text("\n".join(lines) + "\n")
    p = radtrack_cli(str(sheet), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    runs = _runs(store, "two")
    parents = {r.data.tags["radtrack.workload"]: r for r in runs if r.data.tags.get("radtrack.role") == "workload"}
    by_workload: dict[str, list] = {}
    for r in runs:
        if r.data.tags.get("radtrack.role") == "row":
            assert r.info.status == "FINISHED", r.info.run_name
            by_workload.setdefault(r.data.tags["radtrack.workload"], []).append(r)
    for workload, rows_of in by_workload.items():
        _closes_per_gpu(parents[workload], rows_of)
        for r in rows_of:
            assert _own_gpus(r) == _sheet_gpus(r), r.info.run_name  # smi read the row's GPUs
            charged = {v for k, v in r.data.tags.items()
                       if k.startswith("radtrack.attribution.gpu") and k.endswith(".gpu")}
            assert charged == _own_gpus(r), (r.info.run_name, charged)  # its own GPUs only
    both = by_workload["4"][0]
    assert len(_own_gpus(both)) == 2
    assert {"summary/smi/gpu0/energy_j", "summary/smi/gpu1/energy_j"} <= set(both.data.metrics)


def test_data_parallel_run_across_two_gpus(store: str, tmp_path: Path) -> None:
    p = radtrack_cli("-d", "0+1", "-l", "smi+top", "--interval", "0.1", str(REPO / "workloads" / "ddp.py"),
                     "--ranks", "2", "--steps", "3000", "--log-every", "500", "--width", "2048",
                     cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    from mlflow import MlflowClient

    run = next(r for r in _runs(store, "Default") if r.data.tags.get("radtrack.role") == "row")
    assert run.info.status == "FINISHED"
    assert run.data.params["ranks"] == "2" and run.data.params["backend"] == "nccl"
    m = run.data.metrics
    for gpu in ("gpu0", "gpu1"):
        assert f"system/smi/{gpu}/power_w" in m and m[f"summary/smi/{gpu}/energy_j"] > 0
        assert m[f"summary/smi/{gpu}/gpu_util_pct/mean"] > 0  # both GPUs worked
    client = MlflowClient(store)
    procs = [x.value for x in client.get_metric_history(run.info.run_id, "system/top/proc/procs_count")]
    assert max(procs) >= 3, procs  # torch's agent and both ranks in the run's tree
    total = m.get("summary/energy_j")
    if total is not None:  # the run's energy is both GPUs'
        assert total == pytest.approx(m["summary/smi/gpu0/energy_j"] + m["summary/smi/gpu1/energy_j"], rel=0.01)
    trace = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/smi.parquet"))
    assert {"smi/gpu0/power_w", "smi/gpu1/power_w"} <= set(trace.columns)
