"""DLRM-style recommender training: embedding lookups plus MLPs on synthetic clicks.

The model follows DLRM (Naumov et al. 2019): dense features go through a bottom MLP,
each sparse feature pools rows of its own ``EmbeddingBag`` table, the pairwise dot
products of all these vectors (the feature interaction) join the bottom output in the
top MLP, and a logit predicts the click (binary cross-entropy). Embedding gradients are
sparse and applied by plain SGD, so each step touches only the looked-up rows: a mix of
random-access memory traffic and small GEMMs. Click labels depend on the first dense
feature, so the loss falls when the model learns.
"""

from __future__ import annotations

import argparse
import sys

import torch
from _common import Sizes, Workload, autocast, positive_int, run_timed, set_precision
from torch import nn
from torch.nn import functional as F


def mlp(sizes: list[int], last_relu: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense: int, tables: int, rows: int, dim: int,
                 bottom: list[int], top: list[int]) -> None:
        super().__init__()
        self.bottom = mlp([dense, *bottom, dim], last_relu=True)
        self.embeddings = nn.ModuleList(
            nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for _ in range(tables))
        features = tables + 1
        self.register_buffer("pairs", torch.triu_indices(features, features, offset=1),
                             persistent=False)
        self.top = mlp([dim + features * (features - 1) // 2, *top, 1], last_relu=False)

    def forward(self, dense: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """``indices``: (tables, batch, lookups) row ids; returns one click logit per sample."""
        x = self.bottom(dense)
        pooled = [table(idx) for table, idx in zip(self.embeddings, indices, strict=True)]
        vectors = torch.stack([x, *pooled], dim=1)  # (batch, features, dim)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))
        interactions = dots[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x, interactions], dim=1)).squeeze(1)


def layer_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split("-")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected layer widths joined by '-', such as 512-256, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"layer widths must be positive, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "bf16"),
                 steps=Sizes(3000, 2), log_every=Sizes(100, 1), warmup=Sizes(10, 1))
    w.sized("--batch-size", positive_int, Sizes(2048, 8), "samples per step")
    w.sized("--tables", positive_int, Sizes(26, 3), "sparse features, one table each")
    w.sized("--rows", positive_int, Sizes(500_000, 100), "rows per embedding table", "--size")
    w.sized("--dim", positive_int, Sizes(64, 8), "embedding dimension")
    w.parser.add_argument("--lookups", type=positive_int, default=1,
                          help="rows pooled per sparse feature and sample (default: 1)")
    w.parser.add_argument("--dense", type=positive_int, default=13,
                          help="dense features per sample (default: 13, as in Criteo)")
    w.parser.add_argument("--bottom", type=layer_sizes, default=[512, 256],
                          help="bottom MLP hidden widths (default: 512-256)")
    w.parser.add_argument("--top", type=layer_sizes, default=[512, 256],
                          help="top MLP hidden widths (default: 512-256)")
    w.parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default: 0.1)")
    args = w.parse(argv)
    set_precision(args.dtype, args.device)
    # Built on the device: initialising GBs of embedding tables on the CPU takes long.
    with args.device:
        model = DLRM(args.dense, args.tables, args.rows, args.dim, args.bottom, args.top)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    b = args.batch_size
    dense = torch.randn(b, args.dense, device=args.device)
    clicks = (dense[:, 0] > 0).float()
    w.describe(args, batch_size=b, tables=args.tables, rows=args.rows, dim=args.dim,
               lookups=args.lookups, dtype=args.dtype)

    def step() -> torch.Tensor:
        # Fresh row ids every step, as real traffic hits different rows.
        indices = torch.randint(0, args.rows, (args.tables, b, args.lookups), device=args.device)
        opt.zero_grad(set_to_none=True)
        with autocast(args.dtype, args.device):
            logits = model(dense, indices)
        loss = F.binary_cross_entropy_with_logits(logits.float(), clicks)
        loss.backward()
        opt.step()
        return loss

    run_timed(step, args, {"samples_per_s": b})


if __name__ == "__main__":
    sys.exit(main())
