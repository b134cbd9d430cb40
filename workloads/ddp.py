"""Data-parallel training across processes: a small MLP under DistributedDataParallel.

``python workloads/ddp.py --ranks 2`` starts its own ranks through PyTorch's elastic
launcher (``torch.distributed.run``, what ``torchrun --standalone --nproc_per_node 2``
does), so under radtrack (``radtrack -d 0+1 -l smi+top workloads/ddp.py --ranks 2``) every
rank is in the row's process tree and the run watches all of them. Each rank trains the
same model on its own random batches; gradients are all-reduced every step, over NCCL on
GPUs (rank r uses the r-th visible GPU) and gloo on the CPU. Rank 0 logs
``throughput_samples_per_s`` (samples of all ranks), ``step_time_s`` and ``loss`` per
block through ``RADTBenchmark``, and ``ranks`` once.

Nothing is downloaded: the data are random tensors and the model is built in code.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from pathlib import Path

RANK_FLAG = "--as-rank"


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=0,
                   help="ranks to start (default: one per visible GPU, 2 on the CPU)")
    p.add_argument("--steps", type=int, default=60, help="timed steps per rank")
    p.add_argument("--log-every", type=int, default=20, help="steps per logged block")
    p.add_argument("--batch-size", type=int, default=64, help="samples per rank and step")
    p.add_argument("--width", type=int, default=256, help="hidden width of the MLP")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--smoke", action="store_true", help="a few steps, for tests")
    p.add_argument(RANK_FLAG, action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.smoke:
        explicit = {x.split("=")[0] for x in argv}
        a.steps = a.steps if "--steps" in explicit else 6
        a.log_every = a.log_every if "--log-every" in explicit else 3
    if a.ranks < 0:
        p.error("--ranks must be >= 0 (0: one per visible GPU, 2 on the CPU)")
    for name in ("steps", "log_every", "batch_size", "width"):
        if getattr(a, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be a positive integer")
    return a


def _ranks(args: argparse.Namespace) -> int:
    if args.ranks:
        return args.ranks
    import torch

    if args.device != "cpu" and torch.cuda.is_available():
        return torch.cuda.device_count()  # NCCL wants one GPU per rank
    return 2


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Start ``--ranks`` ranks of this script through torch's elastic launcher."""
    from torch.distributed.run import main as torchrun

    torchrun(["--standalone", "--nproc_per_node", str(_ranks(args)), "--max-restarts", "0",
              str(Path(__file__).resolve()), RANK_FLAG, *argv])
    return 0


def train(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(local % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(1234 + rank)
    model = nn.Sequential(nn.Linear(64, args.width), nn.ReLU(), nn.Linear(args.width, args.width),
                          nn.ReLU(), nn.Linear(args.width, 10)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.batch_size, 64, device=device)
    y = torch.randint(0, 10, (args.batch_size,), device=device)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    for _ in range(3):  # warm-up: NCCL/gloo buffers, CUDA kernels
        step()
    run = None
    if rank == 0:
        from radtrack import RADTBenchmark

        run = RADTBenchmark().__enter__()
        run.log_params({"ranks": world, "backend": "nccl" if cuda else "gloo"})
    try:
        done, block = 0, 0
        while done < args.steps:
            n = min(args.log_every, args.steps - done)
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            total = torch.zeros((), device=device)
            for _ in range(n):
                total += step()
            if cuda:
                torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            done += n
            block += 1
            if run is not None:
                metrics = {"throughput_samples_per_s": world * args.batch_size * n / seconds,
                           "step_time_s": seconds / n, "loss": float(total) / n}
                print(f"block {block}: " + "  ".join(f"{k}={v:.4g}" for k, v in metrics.items()),
                      flush=True)
                run.log_metrics(metrics, epoch=block)
    finally:
        if run is not None:
            run.__exit__(*sys.exc_info())
    # Gloo's worker threads can still hold the last all-reduce's work (tensors with Python
    # references) when the interpreter finalises; freeing them then aborts the rank
    # ("terminate called without an active exception", SIGABRT, seen under load). So every
    # rank waits for rank 0's logging, the group is destroyed while Python is fully alive,
    # and main() ends the rank without finalising the interpreter.
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    argv = sys.argv[1:]
    args = _args(argv)
    if args.as_rank:
        train(args)
        atexit._run_exitfuncs()  # what exit handlers there are (MLflow's, code windows') run
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # but not the interpreter's finalisation (see the end of train())
    return launch(args, argv)


if __name__ == "__main__":
    sys.exit(main())
