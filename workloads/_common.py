"""Pieces every stressmark script shares: arguments, device/precision, timing loop, metrics.

Scripts import this module by name; it sits next to them, and both ``python
workloads/x.py`` and radtrack's bootstrap (runpy with ``sys.path[0]`` = the script's
folder) put that folder first on ``sys.path``.

Every script logs, once per block of steps, ``throughput_<unit>`` for each unit of work
it counts, ``step_time_s`` and (where there is one) ``loss``, with ``epoch`` = the
1-based block number, so ``--max-epoch N`` under radtrack stops after exactly N blocks.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from radtrack import RADTBenchmark

#: --dtype name -> storage dtype; tf32 stores fp32 and lets matmuls/convs use TF32 cores.
DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp64": torch.float64,
}


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def device_name(text: str) -> str:
    """``cpu``, ``cuda`` or ``cuda:<index>``; availability is checked after parsing."""
    name = text.strip().lower()
    if name in ("cpu", "cuda"):
        return name
    if name.startswith("cuda:") and name[5:].isdigit():
        return name
    raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:<index>, got {text!r}")


@dataclass(frozen=True)
class Sizes:
    """Defaults of one option: at GPU size and under --smoke."""

    full: Any
    smoke: Any


class Workload:
    """Argument parser of one script plus its GPU-sized and --smoke defaults.

    Sized options default to None in argparse so that a value given on the command line
    wins over both size presets; :meth:`parse` fills the rest from the chosen preset.
    """

    def __init__(self, description: str, *, dtypes: tuple[str, ...] = (),
                 default_dtype: str | None = None, steps: Sizes | None = None,
                 log_every: Sizes | None = None, warmup: Sizes | None = None) -> None:
        self.parser = argparse.ArgumentParser(description=description)
        self._sizes: dict[str, Sizes] = {}
        self.parser.add_argument(
            "--device", type=device_name, default=None,
            help="cpu, cuda or cuda:<index> (default: cuda when available, else cpu)")
        self.parser.add_argument(
            "--smoke", action="store_true",
            help="tiny sizes and a few steps: a seconds-long run that fits a laptop CPU")
        self.parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
        if dtypes:
            self.parser.add_argument(
                "--dtype", choices=dtypes, default=default_dtype or dtypes[0],
                help=f"precision (default: {default_dtype or dtypes[0]})")
        if steps is not None:
            self.sized("--steps", positive_int, steps, "timed steps")
            self.sized("--log-every", positive_int, log_every or Sizes(50, 1),
                       "steps per logged block (one block = one epoch for --max-epoch)")
            self.sized("--warmup", non_negative_int, warmup or Sizes(5, 1),
                       "untimed steps before timing starts")

    def sized(self, flag: str, kind: Callable[[str], Any], sizes: Sizes, help_text: str,
              *aliases: str) -> None:
        """Add an option whose default depends on --smoke."""
        dest = flag.lstrip("-").replace("-", "_")
        self._sizes[dest] = sizes
        self.parser.add_argument(
            flag, *aliases, dest=dest, type=kind, default=None,
            help=f"{help_text} (default: {sizes.full}; --smoke: {sizes.smoke})")

    def parse(self, argv: list[str] | None = None) -> argparse.Namespace:
        args = self.parser.parse_args(argv)
        for dest, sizes in self._sizes.items():
            if getattr(args, dest) is None:
                setattr(args, dest, sizes.smoke if args.smoke else sizes.full)
        args.device = self._resolve_device(args.device)
        torch.manual_seed(args.seed)
        return args

    def _resolve_device(self, name: str | None) -> torch.device:
        if name is None:
            if torch.cuda.is_available():
                return torch.device("cuda")
            print(f"{self.parser.prog}: no CUDA device available, running on cpu", flush=True)
            return torch.device("cpu")
        if name.startswith("cuda"):
            if not torch.cuda.is_available():
                self.parser.error(f"--device {name}: no CUDA device is available to this "
                                  "process (torch.cuda.is_available() is False); use --device cpu")
            index = int(name[5:]) if ":" in name else 0
            if index >= torch.cuda.device_count():
                self.parser.error(f"--device {name}: only {torch.cuda.device_count()} CUDA "
                                  "device(s) are visible to this process")
        return torch.device(name)

    def describe(self, args: argparse.Namespace, **details: Any) -> None:
        """One line saying what runs where, so logs of different runs can be told apart."""
        shown = " ".join(f"{k}={v}" for k, v in details.items())
        print(f"{self.parser.prog}: device={args.device} {shown}", flush=True)

    def error(self, message: str) -> None:
        """Exit 2 with ``message`` and the usage line, like any argparse error."""
        self.parser.error(message)


def set_precision(name: str, device: torch.device) -> torch.dtype:
    """Configure TF32 for ``name`` and return the storage dtype."""
    tf32 = name == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    if tf32 and device.type != "cuda":
        print("tf32 only changes CUDA matmuls/convolutions; on cpu this runs in fp32", flush=True)
    return DTYPES[name]


def autocast(name: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """Mixed precision for training scripts: bf16/fp16 autocast, nothing for fp32/tf32."""
    if name in ("bf16", "fp16"):
        return torch.autocast(device_type=device.type, dtype=DTYPES[name])
    return contextlib.nullcontext()


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def nvtx_profile(device: torch.device) -> Iterator[None]:
    """NVTX range ``profile``, which nsys/ncu capture ranges select; a no-op off CUDA."""
    if device.type != "cuda":
        yield
        return
    torch.cuda.nvtx.range_push("profile")
    try:
        yield
        # The range is host-side; wait for the kernels so they fall inside it.
        synchronize(device)
    finally:
        torch.cuda.nvtx.range_pop()


@dataclass(frozen=True)
class Block:
    """Timing of one logged block of steps."""

    index: int  # 1-based
    steps: int
    seconds: float
    loss: float | None


def timed_blocks(step: Callable[[], torch.Tensor | None], *, steps: int, log_every: int,
                 warmup: int, device: torch.device, profile_steps: int = 3,
                 warmup_step: Callable[[], torch.Tensor | None] | None = None,
                 run: RADTBenchmark | None = None) -> Iterator[Block]:
    """Run ``warmup`` untimed steps, then ``steps`` timed ones in blocks of ``log_every``.

    ``step`` may return a loss tensor; it is summed on the device and read once per block,
    so the loop never waits on the device between steps. The first ``profile_steps``
    timed steps run inside the NVTX ``profile`` range. With ``run``, the warm-up is the
    code window ``warmup`` and each block opens the window ``block`` (step = its index),
    which the caller ends once the block is logged, so the blocks tile the measurement.
    """
    if run is not None and warmup:
        run.begin_window("warmup")
    for _ in range(warmup):
        (warmup_step or step)()
    synchronize(device)
    if run is not None and warmup:
        run.end_window("warmup")
    done = 0
    index = 0
    while done < steps:
        n = min(log_every, steps - done)
        loss_sum: torch.Tensor | None = None
        first = 0
        if run is not None:
            run.begin_window("block", index + 1)
        start = time.perf_counter()
        if done == 0:
            first = min(profile_steps, n)
            with nvtx_profile(device):
                for _ in range(first):
                    loss_sum = _add(loss_sum, step())
        for _ in range(first, n):
            loss_sum = _add(loss_sum, step())
        synchronize(device)
        seconds = time.perf_counter() - start
        done += n
        index += 1
        yield Block(index, n, seconds, float(loss_sum) / n if loss_sum is not None else None)


def _add(total: torch.Tensor | None, loss: torch.Tensor | None) -> torch.Tensor | None:
    if loss is None:
        return total
    loss = loss.detach().float()
    return loss if total is None else total + loss


def log_block(run: RADTBenchmark, block: Block, work_per_step: dict[str, float],
              extra: dict[str, float] | None = None, total_blocks: int | None = None) -> None:
    """Print and log one block: ``throughput_<unit>`` per unit, ``step_time_s``, ``loss``."""
    metrics = {f"throughput_{unit}": amount * block.steps / block.seconds
               for unit, amount in work_per_step.items()}
    metrics["step_time_s"] = block.seconds / block.steps
    if block.loss is not None:
        metrics["loss"] = block.loss
    metrics.update(extra or {})
    of = f"/{total_blocks}" if total_blocks else ""
    shown = "  ".join(f"{k}={v:.4g}" for k, v in metrics.items())
    print(f"block {block.index}{of}: {shown}", flush=True)
    # Logged last: under radtrack this raises SystemExit(0) once --max-epoch is reached.
    run.log_metrics(metrics, epoch=block.index)


def run_timed(step: Callable[[], torch.Tensor | None], args: Any,
              work_per_step: dict[str, float], *,
              extra: Callable[[], dict[str, float]] | None = None,
              warmup_step: Callable[[], torch.Tensor | None] | None = None) -> None:
    """The whole measurement of a step-based script, inside ``RADTBenchmark``."""
    total = -(-args.steps // args.log_every)
    with RADTBenchmark() as run, stop_on_interrupt():
        for block in timed_blocks(step, steps=args.steps, log_every=args.log_every,
                                  warmup=args.warmup, device=args.device,
                                  warmup_step=warmup_step, run=run):
            try:
                log_block(run, block, work_per_step, extra() if extra else None, total)
            finally:  # a --max-epoch stop inside log_block still closes the block
                run.end_window("block", block.index)


@contextlib.contextmanager
def stop_on_interrupt() -> Iterator[None]:
    """Ctrl-C, or radtrack's SIGINT at MaxTime, ends the run with one line, not a traceback.

    Every finished block is already logged, so nothing is lost; the exit status is the
    shell's convention for SIGINT.
    """
    try:
        yield
    except KeyboardInterrupt:
        print("interrupted (SIGINT): stopping after the blocks logged so far", flush=True)
        raise SystemExit(130) from None
