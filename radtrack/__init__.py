"""radtrack: resource-aware experiment tracking for GPU ML workloads, built on MLflow."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radtrack.script.benchmark import RADTBenchmark

__version__ = "0.1.0"
__all__ = ["RADTBenchmark", "__version__"]


def __getattr__(name: str) -> object:
    # RADTBenchmark on first use: the launcher imports this package before every script it
    # starts and never needs the benchmark (its import chain held the script back)
    if name == "RADTBenchmark":
        from radtrack.script.benchmark import RADTBenchmark

        return RADTBenchmark
    raise AttributeError(f"module 'radtrack' has no attribute {name!r}")
