"""Square matrix products (GEMM): the compute-bound peak of a GPU, reported in TFLOP/s.

Each step computes ``C = A @ B`` for n x n matrices in the chosen precision, writing into
a preallocated C so the loop measures the kernel, not the allocator. ``dgemm.py`` is the
same workload with fp64 as the default precision.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision

GEMM_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp64")


def main(argv: list[str] | None = None, default_dtype: str = "fp32") -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=GEMM_DTYPES, default_dtype=default_dtype,
                 steps=Sizes(3000, 4), log_every=Sizes(100, 2), warmup=Sizes(10, 1))
    w.sized("--size", positive_int, Sizes(8192, 128), "matrix order n (n x n matrices)")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    n = args.size
    a = torch.randn(n, n, device=args.device, dtype=dtype)
    b = torch.randn(n, n, device=args.device, dtype=dtype)
    c = torch.empty(n, n, device=args.device, dtype=dtype)
    w.describe(args, n=n, dtype=args.dtype)

    def step() -> None:
        torch.matmul(a, b, out=c)

    run_timed(step, args, {"tflops": 2 * n**3 / 1e12})


if __name__ == "__main__":
    sys.exit(main())
