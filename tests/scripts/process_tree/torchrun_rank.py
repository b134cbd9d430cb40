"""One rank of an elastic (torchrun) job: rank 0 makes an MLflow run; all ranks all-reduce
``STEPS`` times (default 20, about a second), the same count on every rank. gloo on CPU by
default; ``--backend nccl``: each rank on GPU LOCAL_RANK modulo the GPUs there are, a matmul
load between the all-reduces (NCCL refuses two ranks on one GPU: with fewer GPUs than ranks the all-reduce goes through
gloo on CUDA tensors, the load stays on the GPU)."""
import os
import sys
import time

import torch
import torch.distributed as dist

backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "gloo"
steps = int(os.environ.get("STEPS", "20"))
device = "cpu"
if backend == "nccl":
    device = f"cuda:{int(os.environ['LOCAL_RANK']) % torch.cuda.device_count()}"
    torch.cuda.set_device(device)
    if torch.cuda.device_count() < int(os.environ["WORLD_SIZE"]):
        backend = "gloo"
dist.init_process_group(backend)
rank = dist.get_rank()
if rank == 0:
    import mlflow

    mlflow.start_run(run_name="torchrun-rank0")
t = torch.ones(64, device=device)
a = torch.randn(2048, 2048, device=device)
for step in range(steps):
    if device != "cpu":
        for _ in range(20):
            a @ a
    dist.all_reduce(t)
    if rank == 0:
        mlflow.log_metric("sum", float(t[0].item()), step=step)
    time.sleep(0.05)
if rank == 0:
    mlflow.end_run()
dist.destroy_process_group()
