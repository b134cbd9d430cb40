"""ResNet-50 training on synthetic images: convolution-heavy vision training.

The network is the standard ResNet-50 (bottleneck blocks [3, 4, 6, 3], widths
64-128-256-512, expansion 4, 1000 classes), written out in plain torch. Images and
labels are random tensors made once on the device, so the run measures the GPU and not
an input pipeline. SGD with momentum, cross-entropy loss.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, autocast, positive_int, run_timed, set_precision
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(in_ch, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch),
        )
        # Zero-init of the last BN makes each block start as identity (He et al. 2019 trick).
        nn.init.zeros_(self.body[-1].weight)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_ch))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3), classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
            nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        stages: list[nn.Module] = []
        in_ch = 64
        for i, blocks in enumerate(layers):
            width = 64 * 2**i
            for j in range(blocks):
                stages.append(Bottleneck(in_ch, width, stride=2 if j == 0 and i > 0 else 1))
                in_ch = width * Bottleneck.expansion
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(in_ch, classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)))


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "bf16"),
                 steps=Sizes(400, 2), log_every=Sizes(20, 1), warmup=Sizes(5, 1))
    w.sized("--batch-size", positive_int, Sizes(128, 2), "images per step")
    w.sized("--size", positive_int, Sizes(224, 32), "image height and width in pixels")
    w.parser.add_argument("--classes", type=positive_int, default=1000,
                          help="number of classes (default: 1000)")
    w.parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default: 0.1)")
    args = w.parse(argv)
    set_precision(args.dtype, args.device)
    # channels_last lets cuDNN pick its tensor-core NHWC kernels.
    fmt = torch.channels_last if args.device.type == "cuda" else torch.contiguous_format
    with args.device:  # initialise the weights on the device, not on the CPU first
        model = ResNet(classes=args.classes).to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.size, args.size,
                         device=args.device).to(memory_format=fmt)
    labels = torch.randint(0, args.classes, (args.batch_size,), device=args.device)
    w.describe(args, batch_size=args.batch_size, size=args.size, dtype=args.dtype,
               params_m=round(sum(p.numel() for p in model.parameters()) / 1e6, 1))

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with autocast(args.dtype, args.device):
            loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        return loss

    run_timed(step, args, {"samples_per_s": args.batch_size})


if __name__ == "__main__":
    sys.exit(main())
