"""``radt.run.RADTBenchmark``: radtrack's RADTBenchmark under radT's name."""

from __future__ import annotations

from radtrack.script.benchmark import RADTBenchmark

__all__ = ["RADTBenchmark"]
