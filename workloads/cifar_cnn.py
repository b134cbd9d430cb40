"""The PyTorch CIFAR-10 tutorial CNN: a tiny model fed by a CPU-side input pipeline.

The network is the tutorial's (conv 3->6 and 6->16 with 5x5 kernels and 2x2 max-pooling,
then fully connected 400->120->84->10), trained with SGD (lr 0.001, momentum 0.9) on
mini-batches of 4. Every sample is produced on the CPU per step, through a
``torch.utils.data`` Dataset/DataLoader as in the tutorial: a 32x32 uint8 image, converted
to float and normalised, batched, then copied to the device. The GPU work per step is
tiny, so the run is bound by the CPU and by launch overhead.

Images are synthetic by default and learnable, but not at a glance: each class has a
fixed smooth colour pattern (drawn once from the seed), and every image is its class's
pattern at a random shift (up to 4 pixels each way) and contrast, under Gaussian pixel
noise (``--noise``, grey levels). A held-out split of ``--val-samples`` images, drawn
from another stream of the same distribution and never trained on, is evaluated after
every epoch and logged as ``val_acc`` (fraction of held-out images classified right), so
time-to-accuracy studies have a target to reach (docs/workloads.md: 0.92). With
``--target-accuracy A`` the script stops after the first epoch whose ``val_acc`` >= A.

``--data-dir`` trains on CIFAR-10 python-format batches instead: the ``data_batch_*``
pickle files of ``cifar-10-python.tar.gz``, each a dict with ``data`` (N x 3072 uint8,
the red, green and blue 32x32 planes of each image) and ``labels`` (N ints); the last
``--val-samples`` images (at most a fifth) are held out. Only read files you trust:
pickle runs code from the file it loads.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import torch
from _common import (
    Sizes,
    Workload,
    autocast,
    log_block,
    non_negative_float,
    non_negative_int,
    positive_int,
    set_precision,
    stop_on_interrupt,
    timed_blocks,
)
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, default_collate

from radtrack import RADTBenchmark

CLASSES = 10


class TutorialNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def to_input(image: torch.Tensor) -> torch.Tensor:
    """uint8 CHW -> float in [-1, 1]: the tutorial's ToTensor + Normalize((0.5,)*3, (0.5,)*3)."""
    return (image.float() / 255 - 0.5) / 0.5


def class_patterns(seed: int) -> torch.Tensor:
    """One smooth 3x32x32 pattern per class (unit standard deviation), fixed by ``seed``."""
    gen = torch.Generator().manual_seed(seed * 7_919 + 17)
    coarse = torch.randn(CLASSES, 3, 4, 4, generator=gen)
    smooth = F.interpolate(coarse, size=(32, 32), mode="bilinear", align_corners=False)
    return smooth / smooth.std(dim=(1, 2, 3), keepdim=True)


class SyntheticCifar(Dataset):
    """CIFAR-shaped samples drawn on demand on the CPU, reproducible per index.

    ``split`` 0 is the training stream, 1 the held-out one: the same classes and
    patterns, different draws.
    """

    def __init__(self, samples: int, seed: int, noise: float = 240.0, split: int = 0) -> None:
        self.samples = samples
        self.seed = seed
        self.noise = noise
        self.split = split
        self.patterns = class_patterns(seed)

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        gen = torch.Generator().manual_seed((self.seed * 2 + self.split) * 1_000_003 + index)
        label = int(torch.randint(0, CLASSES, (1,), generator=gen))
        dx, dy = (int(v) for v in torch.randint(-4, 5, (2,), generator=gen))
        contrast = 20.0 + 30.0 * float(torch.rand(1, generator=gen))
        pattern = torch.roll(self.patterns[label], shifts=(dy, dx), dims=(1, 2))
        noise = torch.randn(3, 32, 32, generator=gen) * self.noise
        image = (128.0 + contrast * pattern + noise).round().clamp(0, 255).to(torch.uint8)
        return to_input(image), label


class PickledCifar(Dataset):
    """CIFAR-10 python-format batches held in memory as uint8; converted per item."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images = torch.from_numpy(images)
        self.labels = torch.from_numpy(labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return to_input(self.images[index]), int(self.labels[index])


class DataError(Exception):
    """A CIFAR batch file or folder that cannot be used, with the reason."""


def load_cifar_batches(data_dir: Path) -> PickledCifar:
    """Read every ``data_batch_*`` file in ``data_dir`` (or its ``cifar-10-batches-py``)."""
    if not data_dir.is_dir():
        raise DataError(f"--data-dir {data_dir}: not a directory")
    folder = data_dir / "cifar-10-batches-py" if (data_dir / "cifar-10-batches-py").is_dir() \
        else data_dir
    files = sorted(folder.glob("data_batch_*"))
    if not files:
        raise DataError(f"--data-dir {data_dir}: no data_batch_* files (CIFAR-10 python "
                        "format) in it or in its cifar-10-batches-py folder")
    images, labels = [], []
    for path in files:
        data, lab = _read_batch(path)
        images.append(data)
        labels.append(lab)
    return PickledCifar(np.concatenate(images), np.concatenate(labels))


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with path.open("rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: not a readable CIFAR-10 pickle ({exc})") from None
    if not isinstance(batch, dict):
        raise DataError(f"{path}: expected a pickled dict, found {type(batch).__name__}")
    # The official files have bytes keys (pickled under Python 2); accept str keys too.
    get = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}.get
    data, labels = get("data"), get("labels")
    if data is None or labels is None:
        raise DataError(f"{path}: missing the 'data' or 'labels' entry")
    data = np.asarray(data)
    labels = np.asarray(labels, dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise DataError(f"{path}: 'data' must be N x 3072 uint8, found {data.shape} {data.dtype}")
    if labels.shape != (data.shape[0],):
        raise DataError(f"{path}: {len(labels)} labels for {data.shape[0]} images")
    if labels.size and (labels.min() < 0 or labels.max() >= CLASSES):
        raise DataError(f"{path}: labels must lie in 0..{CLASSES - 1}")
    return data.reshape(-1, 3, 32, 32), labels


def held_out(dataset: PickledCifar, count: int) -> tuple[PickledCifar, PickledCifar]:
    """Split the last ``count`` images (at most a fifth) off as the held-out set."""
    count = min(count, len(dataset) // 5)
    cut = len(dataset) - count
    return (PickledCifar(dataset.images[:cut].numpy(), dataset.labels[:cut].numpy()),
            PickledCifar(dataset.images[cut:].numpy(), dataset.labels[cut:].numpy()))


def accuracy(model: nn.Module, data: Dataset, device: torch.device, precision: str) -> float:
    """Fraction of ``data`` the model classifies right (evaluation mode, no gradients)."""
    loader = DataLoader(data, batch_size=256, shuffle=False)
    right = total = 0
    model.eval()
    with torch.no_grad(), autocast(precision, device):
        for images, labels in loader:
            predicted = model(images.to(device)).argmax(dim=1).cpu()
            right += int((predicted == labels).sum())
            total += len(labels)
    model.train()
    return right / total if total else float("nan")


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "bf16"))
    w.sized("--epochs", positive_int, Sizes(2, 1), "passes over the data set")
    w.sized("--samples", positive_int, Sizes(50_000, 64),
            "synthetic images per epoch (ignored with --data-dir)", "--size")
    w.sized("--workers", non_negative_int, Sizes(2, 0), "DataLoader worker processes")
    w.sized("--val-samples", positive_int, Sizes(2000, 200),
            "held-out images evaluated after each epoch (logged as val_acc)")
    w.sized("--noise", non_negative_float, Sizes(240.0, 24.0),
            "standard deviation of the synthetic images' pixel noise, in grey levels")
    w.parser.add_argument("--batch-size", type=positive_int, default=4,
                          help="images per step (default: 4, as in the tutorial)")
    w.parser.add_argument("--data-dir", type=Path, default=None,
                          help="folder with CIFAR-10 python-format data_batch_* files")
    w.sized("--lr", float, Sizes(0.001, 0.005), "SGD learning rate")
    w.parser.add_argument("--target-accuracy", type=float, default=None, metavar="A",
                          help="stop after the first epoch whose val_acc >= A (e.g. 0.92)")
    args = w.parse(argv)
    set_precision("fp32", args.device)
    if args.data_dir is not None:
        try:
            dataset, validation = held_out(load_cifar_batches(args.data_dir), args.val_samples)
        except DataError as exc:
            sys.exit(f"{w.parser.prog}: {exc}")
        source = f"{args.data_dir} ({len(dataset) + len(validation)} images)"
    else:
        dataset = SyntheticCifar(args.samples, args.seed, args.noise)
        validation = SyntheticCifar(args.val_samples, args.seed, args.noise, split=1)
        source = f"synthetic ({len(dataset)} images)"
    if len(dataset) < args.batch_size:
        sys.exit(f"{w.parser.prog}: {source}: fewer images than --batch-size {args.batch_size}")
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True,
                        num_workers=args.workers, pin_memory=args.device.type == "cuda",
                        persistent_workers=args.workers > 0)
    model = TutorialNet().to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    w.describe(args, data=source, held_out=len(validation), batch_size=args.batch_size,
               epochs=args.epochs, workers=args.workers, dtype=args.dtype)

    def train_on(images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        images = images.to(args.device, non_blocking=True)
        labels = labels.to(args.device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with autocast(args.dtype, args.device):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        return loss

    batches = iter(loader)

    def step() -> torch.Tensor:
        nonlocal batches
        try:
            images, labels = next(batches)
        except StopIteration:  # end of an epoch
            batches = iter(loader)
            images, labels = next(batches)
        return train_on(images, labels)

    # Warm-up trains on one fixed batch so that it does not shift the epoch boundaries.
    fixed = default_collate([dataset[i] for i in range(args.batch_size)])
    per_epoch = len(loader)
    with RADTBenchmark() as run, stop_on_interrupt():
        for block in timed_blocks(step, steps=args.epochs * per_epoch, log_every=per_epoch,
                                  warmup=3, device=args.device,
                                  warmup_step=lambda: train_on(*fixed), run=run):
            try:
                # evaluated inside the block's code window (its energy is the epoch's) but
                # outside the timed steps: throughput counts training only
                val_acc = accuracy(model, validation, args.device, args.dtype)
                log_block(run, block, {"samples_per_s": args.batch_size}, {"val_acc": val_acc},
                          total_blocks=args.epochs)
            finally:
                run.end_window("block", block.index)
            if args.target_accuracy is not None and val_acc >= args.target_accuracy:
                print(f"val_acc {val_acc:.4f} >= --target-accuracy {args.target_accuracy:g}: "
                      f"stopping after epoch {block.index}", flush=True)
                break


if __name__ == "__main__":
    sys.exit(main())
