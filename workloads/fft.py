"""Batched complex FFTs: cuFFT throughput, bound by memory bandwidth at large sizes.

Each step transforms ``--batch-size`` complex signals of length ``--size`` (1-D) or
``--batch-size`` square ``--size`` x ``--size`` images (``--dims 2``), forward and then
inverse so the data stays bounded. ``throughput_gflops`` uses the conventional FFT
operation count of 5 N log2 N per transform of N points.
"""

from __future__ import annotations

import math
import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision

SIZES = {1: Sizes(1 << 20, 1024), 2: Sizes(4096, 64)}
COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp64"),
                 steps=Sizes(20000, 3), log_every=Sizes(1000, 1), warmup=Sizes(10, 1))
    w.parser.add_argument("--size", type=positive_int, default=None,
                          help="points per dimension of a transform (default: 1048576 for "
                          "--dims 1, 4096 for --dims 2; --smoke: 1024 and 64)")
    w.sized("--batch-size", positive_int, Sizes(64, 4), "transforms per step")
    w.parser.add_argument("--dims", type=int, choices=(1, 2), default=1,
                          help="1-D signals or 2-D images (default: 1)")
    args = w.parse(argv)
    if args.size is None:
        args.size = SIZES[args.dims].smoke if args.smoke else SIZES[args.dims].full
    dtype = COMPLEX[set_precision(args.dtype, args.device)]
    shape = (args.batch_size, args.size) if args.dims == 1 else \
        (args.batch_size, args.size, args.size)
    points = args.size ** args.dims
    signal = torch.randn(shape, device=args.device, dtype=dtype)
    w.describe(args, shape="x".join(map(str, shape)), dtype=args.dtype)

    def step() -> None:
        if args.dims == 1:
            torch.fft.ifft(torch.fft.fft(signal))
        else:
            torch.fft.ifft2(torch.fft.fft2(signal))

    # Two transforms (forward and inverse) per signal and step.
    flops = 2 * args.batch_size * 5 * points * math.log2(points)
    run_timed(step, args, {"gflops": flops / 1e9, "samples_per_s": args.batch_size})


if __name__ == "__main__":
    sys.exit(main())
