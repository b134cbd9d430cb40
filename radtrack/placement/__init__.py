"""GPU placement of one workload: clocks/power, MIG instances, MPS daemons, plain devices.

``with WorkloadPlacement(specs, run_dir) as placement:`` sets everything up, gives each
row its environment (``env_for``) and tags (``tags_for``), and tears down exactly what it
created when the block ends, also on an exception or Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType

from radtrack import gpus as gpus_mod
from radtrack.errors import PlacementError
from radtrack.placement.base import Part
from radtrack.placement.clocks import GpuSettings
from radtrack.placement.mig import MigInstances
from radtrack.placement.mps import MpsDaemons
from radtrack.placement.plain import PlainPlacement
from radtrack.spec import RunSpec

__all__ = ["WorkloadPlacement"]


class WorkloadPlacement:
    """Context manager that places one workload's rows on the GPUs and cleans up after."""

    def __init__(self, specs: list[RunSpec], run_dir: Path,
                 log: Callable[[str], None] = print):
        self.specs = list(specs)
        self.run_dir = Path(run_dir)
        self.log = log
        needs_host = any(s.collocation_kind != "plain" or s.clocks or s.power_limit is not None
                         for s in self.specs)
        host = gpus_mod.inventory() if needs_host else []
        # plain rows' Devices need only the other vendors' GPUs, for their variables: an
        # NVIDIA GPU (or one no listener declares) gets CUDA_VISIBLE_DEVICES without asking
        # nvidia-smi again
        plain_host = host if needs_host else \
            gpus_mod.other_vendors() if any(s.devices for s in self.specs) else []
        # Order matters: clocks and power first, MIG instances before the MPS daemons, and
        # teardown runs in reverse.
        self.parts: list[Part] = [
            GpuSettings(self.specs, log, host),
            MigInstances(self.specs, log, host),
            MpsDaemons(self.specs, self.run_dir, log, host),
            PlainPlacement(self.specs, plain_host),
        ]
        self._entered: list[Part] = []

    def describe(self) -> list[str]:
        """The setup and teardown steps, without running any of them."""
        return [step for part in self.parts for step in part.describe()]

    def __enter__(self) -> WorkloadPlacement:
        try:
            for part in self.parts:
                self._entered.append(part)
                part.setup()
        except BaseException as exc:
            leftovers = self._teardown()
            if isinstance(exc, PlacementError) and leftovers:
                raise PlacementError(f"{exc}; cleanup also failed: {'; '.join(leftovers)}") \
                    from exc
            if isinstance(exc, Exception) and not isinstance(exc, PlacementError):
                raise PlacementError(f"GPU placement failed: {exc}") from exc
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        leftovers = self._teardown()
        if leftovers and exc_type is None:
            raise PlacementError("GPU cleanup failed: " + "; ".join(leftovers))

    def close(self) -> list[str]:
        """Tear down now (idempotent); returns what could not be undone."""
        return self._teardown()

    def _teardown(self) -> list[str]:
        problems: list[str] = []
        with _sigint_deferred():
            for part in reversed(self._entered):
                problems += part.teardown()
            if not problems:
                self._entered = []
            # Otherwise every part stays entered: each remembers what still exists, so a
            # second call retries only that.
        for p in problems:
            self.log(f"placement cleanup: {p}")
        return problems

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        """Environment additions for this row's process."""
        env: dict[str, str] = {}
        for part in self.parts:
            env.update(part.env_for(spec))
        return env

    def planned_env(self, spec: RunSpec) -> dict[str, str]:
        """env_for before anything exists (MIG UUIDs are only known at run time)."""
        env: dict[str, str] = {}
        for part in self.parts:
            env.update(part.planned_env(spec))
        return env

    def tags_for(self, spec: RunSpec) -> dict[str, str]:
        tags: dict[str, str] = {}
        for part in self.parts:
            tags.update(part.tags_for(spec))
        return tags

    def artifacts(self) -> list[Path]:
        """Files for the workload's parent run, such as the MPS control logs."""
        return [p for part in self.parts for p in part.artifacts() if p.is_file()]


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C while tearing down, so a second press cannot strand a MIG instance."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
