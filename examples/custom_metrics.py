"""A training script that logs its own metrics into the run radtrack creates.

Fits a small MLP to a synthetic regression task and, once per epoch, logs ``loss``,
``val_loss`` and ``throughput_samples_per_s`` with ``epoch=`` set, so that
``--max-epoch N`` (or a sheet's MaxEpoch) stops it cleanly after epoch N. At the end it
writes a small JSON report and stores it as a run artifact. Run it on its own (the
``RADTBenchmark`` calls do nothing outside radtrack) or tracked:

    python examples/custom_metrics.py --epochs 5
    python -m radtrack -l top --max-epoch 3 examples/custom_metrics.py --epochs 10
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from radtrack import RADTBenchmark


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive_int, default=5)
    parser.add_argument("--samples", type=positive_int, default=2048, help="training samples")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    # y = sin(x0) + x1^2 / 2 + noise: learnable, so the loss visibly falls.
    x = torch.randn(args.samples + 512, 2)
    y = (torch.sin(x[:, 0]) + x[:, 1] ** 2 / 2 + 0.05 * torch.randn(len(x))).unsqueeze(1)
    x_train, y_train, x_val, y_val = x[:args.samples], y[:args.samples], x[args.samples:], \
        y[args.samples:]
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    history: list[dict[str, float]] = []

    with RADTBenchmark() as run:
        run.log_params({"hidden": 64, "optimizer": "adam"})  # plain mlflow calls work too
        try:
            for epoch in range(1, args.epochs + 1):
                start = time.perf_counter()
                order = torch.randperm(args.samples)
                total = 0.0
                for i in range(0, args.samples, args.batch_size):
                    idx = order[i:i + args.batch_size]
                    opt.zero_grad()
                    loss = loss_fn(model(x_train[idx]), y_train[idx])
                    loss.backward()
                    opt.step()
                    total += loss.item() * len(idx)
                with torch.no_grad():
                    val = loss_fn(model(x_val), y_val).item()
                seconds = time.perf_counter() - start
                metrics = {"loss": total / args.samples, "val_loss": val,
                           "throughput_samples_per_s": args.samples / seconds}
                history.append({"epoch": epoch, **metrics})
                print(f"epoch {epoch}: loss={metrics['loss']:.4f} val_loss={val:.4f}", flush=True)
                # Epochs count from 1, so --max-epoch N raises SystemExit(0) right after epoch N.
                run.log_metrics(metrics, epoch=epoch)
        finally:
            # Also on the SystemExit of a max-epoch/max-time stop: the report covers what ran.
            save_report(run, history)


def save_report(run: RADTBenchmark, history: list[dict[str, float]]) -> None:
    """Store the per-epoch history as ``report/history.json`` on the run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.json"
        path.write_text(json.dumps(history, indent=2))
        run.log_artifact(str(path), artifact_path="report")
    print(f"report: {len(history)} epoch(s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
