"""Two node agents on one GPU host, one GPU each (node 0 on GPU 0, node 1 on GPU 1: -d 0 and
-d 1, so CUDA_VISIBLE_DEVICES=0 and 1), an NCCL DDP script with NVLink multicast left off:
one run, both GPUs' energy, per-node series. Needs two GPUs (skipped, visibly, without)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_nodes_by_hand import DDP, _env, _port, finish, the_run

from radtrack.vocab import schema

pytestmark = pytest.mark.gpu

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def _gpus() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no GPU
        return 0


def test_two_nodes_one_gpu_each_are_one_run_with_both_gpus_energy(tmp_path: Path) -> None:
    import subprocess
    import sys

    if _gpus() < 2:
        pytest.skip("needs 2 GPUs")
    port = _port()
    procs = []
    for node in (0, 1):
        env = {**_env(tmp_path, node), **NO_MULTICAST}
        env.pop("GLOO_SOCKET_IFNAME", None)
        argv = [sys.executable, "-m", "radtrack", "--wait-end", "-e", "multi", "-l", "smi+top",
                "--interval", "0.1", "-d", str(node), "--nodes", "2", "--node-rank", str(node),
                "--master", f"127.0.0.1:{port}", str(DDP), "--backend", "nccl", "--steps", "300",
                "--matmul", "4096", "--step-s", "0"]
        log = (tmp_path / f"node{node}.log").open("w")
        procs.append(subprocess.Popen(argv, cwd=tmp_path / f"node{node}", env=env, text=True,
                                      stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    out = [finish(tmp_path, k, p, 600) for k, p in enumerate(procs)]
    assert [p.returncode for p in procs] == [0, 0], "\n----\n".join(out)
    sums = [line.rsplit(" ", 1)[1] for o in out for line in o.splitlines() if "weight sum" in line]
    assert len(sums) == 2 and sums[0] == sums[1], out

    client, run = the_run(tmp_path)
    assert run.info.status == "FINISHED"
    tags, metrics = run.data.tags, run.data.metrics
    # each node watched its own GPU: the runs' GPU 0 is a different physical GPU per node
    uuid0 = tags[schema.gpu_tag("gpu0", "uuid")]
    uuid1 = tags[schema.node_tag(1, schema.gpu_tag("gpu0", "uuid"))]
    assert uuid0 and uuid1 and uuid0 != uuid1
    for key in ("system/smi/gpu0/power_w", "system/node1/smi/gpu0/power_w"):
        history = client.get_metric_history(run.info.run_id, key)
        assert len(history) > 10 and max(m.value for m in history) > 0, key
    e0 = metrics[schema.node_summary_key(0, "gpu_energy_j")]
    e1 = metrics[schema.node_summary_key(1, "gpu_energy_j")]
    assert e0 > 0 and e1 > 0
    assert metrics[schema.nodes_total_key("gpu_energy_j")] == pytest.approx(e0 + e1)
    assert metrics["summary/node1/smi/gpu0/energy_j"] == pytest.approx(e1)
    assert metrics["summary/smi/gpu0/energy_j"] == pytest.approx(e0)
    print(f"node0 {e0:.0f} J on {uuid0}, node1 {e1:.0f} J on {uuid1}, "
          f"total {e0 + e1:.0f} J, {os.environ.get('CUDA_VISIBLE_DEVICES', 'all GPUs')}")
