"""torch.multiprocessing.spawn with gloo: two ranks, rank 0 makes an MLflow run (``--all``:
every rank does), each all-reducing a tensor for about a second."""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank: int, world: int, port: int, all_log: bool) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    logging = all_log or rank == 0
    if logging:
        import mlflow

        mlflow.start_run(run_name=f"spawn-rank{rank}")
    t = torch.ones(64)
    for step in range(5):
        dist.all_reduce(t)
        if logging:
            mlflow.log_metric("sum", float(t[0]), step=step)
        time.sleep(0.2)
    if logging:
        mlflow.end_run()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    mp.spawn(worker, args=(2, free, "--all" in sys.argv), nprocs=2)
