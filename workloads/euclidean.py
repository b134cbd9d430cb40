"""Row-wise Euclidean distance of two large matrices: a pure memory-streaming workload.

Each step computes ``||A[i] - B[i]||_2`` for every row i of two random rows x dim
matrices. Two matrices are read, one vector written and almost no arithmetic done per
byte, so the run measures achievable memory bandwidth (``throughput_gbytes_per_s``
counts the bytes of A and B read once per step).
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp64", "bf16", "fp16"),
                 steps=Sizes(20000, 3), log_every=Sizes(1000, 1), warmup=Sizes(20, 1))
    w.sized("--size", positive_int, Sizes(262_144, 512), "rows of each matrix", "--rows")
    w.sized("--dim", positive_int, Sizes(1024, 64), "columns of each matrix")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    a = torch.randn(args.size, args.dim, device=args.device, dtype=dtype)
    b = torch.randn(args.size, args.dim, device=args.device, dtype=dtype)
    w.describe(args, rows=args.size, dim=args.dim, dtype=args.dtype,
               gbytes=f"{2 * a.nbytes / 1e9:.3g}")

    def step() -> None:
        torch.linalg.vector_norm(a - b, dim=1)

    run_timed(step, args, {"rows_per_s": args.size, "gbytes_per_s": 2 * a.nbytes / 1e9})


if __name__ == "__main__":
    sys.exit(main())
