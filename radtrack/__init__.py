"""radtrack: resource-aware experiment tracking for GPU ML workloads, built on MLflow."""

from radtrack.script.benchmark import RADTBenchmark

__version__ = "0.1.0"
__all__ = ["RADTBenchmark", "__version__"]
