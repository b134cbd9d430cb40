"""Sepia filter over a batch of RGB images: an element-wise image-processing kernel chain.

Each step converts a batch of uint8 RGB images to float, mixes the channels with the
classic sepia matrix (each output channel a weighted sum of R, G and B), clamps to
0..255 and converts back to uint8: per pixel, a read of 3 bytes, a 3x3 matrix-vector
product and a write of 3 bytes. The images are random and made once on the device.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision

# Rows: output R, G, B; columns: input R, G, B (the widely used Microsoft sepia tone).
SEPIA = ((0.393, 0.769, 0.189),
         (0.349, 0.686, 0.168),
         (0.272, 0.534, 0.131))


def sepia(images: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """uint8 images (N, 3, H, W) -> sepia-toned uint8 images of the same shape."""
    mixed = torch.einsum("oc,nchw->nohw", matrix, images.to(matrix.dtype))
    return mixed.clamp_(0, 255).to(torch.uint8)


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp16", "bf16"),
                 steps=Sizes(5000, 3), log_every=Sizes(250, 1), warmup=Sizes(10, 1))
    w.sized("--batch-size", positive_int, Sizes(64, 2), "images per step")
    w.sized("--size", positive_int, Sizes(1080, 64), "image height in pixels (width = 16/9 of it)")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    height, width = args.size, args.size * 16 // 9
    images = torch.randint(0, 256, (args.batch_size, 3, height, width), device=args.device,
                           dtype=torch.uint8)
    matrix = torch.tensor(SEPIA, device=args.device, dtype=dtype)
    w.describe(args, batch_size=args.batch_size, image=f"{width}x{height}", dtype=args.dtype)

    def step() -> None:
        sepia(images, matrix)

    pixels = args.batch_size * height * width
    run_timed(step, args, {"images_per_s": args.batch_size, "mpixels_per_s": pixels / 1e6})


if __name__ == "__main__":
    sys.exit(main())
