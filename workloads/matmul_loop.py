"""Host-bound GPU work: matrices made on the CPU and copied over for every product.

Each step draws two random n x n matrices on the host, copies them to the device,
multiplies them and waits for the result. The GPU idles while the CPU generates data and
the copy crosses PCIe, so GPU utilisation stays well below 100 % although a GPU kernel
runs every step: the pattern of a workload starved by its input pipeline.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision, synchronize


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "fp64"),
                 steps=Sizes(50, 3), log_every=Sizes(5, 1), warmup=Sizes(2, 1))
    w.sized("--size", positive_int, Sizes(10000, 128), "matrix order n (n x n matrices)")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    n = args.size
    w.describe(args, n=n, dtype=args.dtype)

    def step() -> None:
        a = torch.rand(n, n, dtype=dtype).to(args.device)
        b = torch.rand(n, n, dtype=dtype).to(args.device)
        torch.matmul(a, b)
        # Waiting every step is the point: the next host-side draw cannot overlap the GPU.
        synchronize(args.device)

    work = {"iters_per_s": 1.0, "tflops": 2 * n**3 / 1e12}
    if args.device.type == "cuda":
        # Two n x n matrices cross from host to device every step.
        work["h2d_gbytes_per_s"] = 2 * n * n * torch.finfo(dtype).bits / 8 / 1e9
    run_timed(step, args, work)


if __name__ == "__main__":
    sys.exit(main())
