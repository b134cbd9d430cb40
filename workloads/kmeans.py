"""Lloyd's k-means on synthetic clusters: distance GEMMs, arg-min and scatter updates.

Points are drawn around ``--clusters`` random centres; each step is one Lloyd iteration:
squared distances from every point to every centroid (``|x|^2 - 2 x.c + |c|^2``, one GEMM
per chunk of points), the nearest centroid per point, and the new centroids as the
means of their points (``index_add_``). The objective, the inertia (mean squared
distance to the nearest centroid), is logged as ``loss`` and falls as the iterations
converge.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision


def assign(points: torch.Tensor, centroids: torch.Tensor, chunk: int,
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest centroid of every point and the squared distance to it, chunk by chunk so
    the points x clusters distance matrix never has to exist whole."""
    c_sq = (centroids * centroids).sum(dim=1)
    labels, dists = [], []
    for part in points.split(chunk):
        d = (part * part).sum(dim=1, keepdim=True) - 2 * part @ centroids.T + c_sq
        best, idx = d.min(dim=1)
        labels.append(idx)
        dists.append(best.clamp_min(0))
    return torch.cat(labels), torch.cat(dists)


def update(points: torch.Tensor, labels: torch.Tensor, centroids: torch.Tensor) -> torch.Tensor:
    """Mean of each cluster's points; an empty cluster keeps its old centroid."""
    k = centroids.shape[0]
    sums = torch.zeros_like(centroids).index_add_(0, labels, points)
    counts = torch.bincount(labels, minlength=k).to(points.dtype).unsqueeze(1)
    return torch.where(counts > 0, sums / counts.clamp_min(1), centroids)


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "fp64"),
                 steps=Sizes(1000, 3), log_every=Sizes(50, 1), warmup=Sizes(3, 1))
    w.sized("--size", positive_int, Sizes(2_000_000, 2000), "points", "--points")
    w.sized("--dim", positive_int, Sizes(64, 8), "dimensions per point")
    w.sized("--clusters", positive_int, Sizes(1024, 8), "k, the number of centroids")
    w.sized("--chunk", positive_int, Sizes(262_144, 512), "points per distance GEMM")
    args = w.parse(argv)
    if args.clusters > args.size:
        w.error(f"--clusters {args.clusters}: more clusters than the {args.size} points")
    dtype = set_precision(args.dtype, args.device)
    n, d, k = args.size, args.dim, args.clusters
    centres = torch.randn(k, d, device=args.device, dtype=dtype) * 10
    points = centres[torch.randint(0, k, (n,), device=args.device)]
    points += torch.randn(n, d, device=args.device, dtype=dtype)
    # Forgy initialisation: k distinct points picked at random.
    state = {"centroids": points[torch.randperm(n, device=args.device)[:k]].clone()}
    w.describe(args, points=n, dim=d, clusters=k, dtype=args.dtype)

    def step() -> torch.Tensor:
        labels, dists = assign(points, state["centroids"], args.chunk)
        state["centroids"] = update(points, labels, state["centroids"])
        return dists.mean()  # logged as "loss": the k-means inertia per point

    # Per iteration: 2 n k d flops in the distance GEMMs dominate.
    run_timed(step, args, {"points_per_s": n, "gflops": 2 * n * k * d / 1e9})


if __name__ == "__main__":
    sys.exit(main())
