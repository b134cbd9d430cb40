"""A tiny DDP training over torch.distributed's env:// rendezvous (gloo on CPU, nccl with
--backend nccl on GPUs): each rank trains a linear model for --steps steps, all-reducing
its gradients; rank 0 prints the final weight sum. With --hold FILE, every rank writes
FILE.<rank> once it has stepped once, then keeps stepping until FILE exists (a test kills
a node meanwhile); --matmul N adds an NxN matmul load to each step. Prints its rank
variables first."""

import argparse
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--backend", default="gloo")
p.add_argument("--hold", default=None)
p.add_argument("--step-s", type=float, default=0.01)
p.add_argument("--matmul", type=int, default=0, help="an NxN matmul each step (load)")
a = p.parse_args()
print("env", {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
                                              "NODE_RANK", "LOCAL_RANK")}, flush=True)
dist.init_process_group(a.backend, init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", 0) if a.backend == "nccl" else torch.device("cpu")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(rank)
step = 0
while True:
    x = torch.randn(256, 64, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if a.matmul:
        m = torch.randn(a.matmul, a.matmul, device=device)
        for _ in range(10):
            m = (m @ m).tanh()
        float(m.sum())
    step += 1
    if a.hold:
        Path(f"{a.hold}.{rank}").touch()
        if Path(a.hold).exists():
            break
    elif step >= a.steps:
        break
    time.sleep(a.step_s)
total = sum(float(p.detach().sum()) for p in model.parameters())
dist.barrier()
print(f"rank {rank}/{world} done after {step} steps, weight sum {total:.6f}", flush=True)
dist.destroy_process_group()
