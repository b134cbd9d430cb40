"""radT compatibility alias: scripts written for radT run unchanged under radtrack.

``import radt`` then ``with radt.run.RADTBenchmark() as run:`` (or ``from radt.run import
RADTBenchmark``) gives :class:`radtrack.RADTBenchmark`: attached to the launcher's run
under radtrack, a no-op otherwise. Nothing in radtrack imports this package; new scripts
should use ``from radtrack import RADTBenchmark`` (docs/radt-migration.md).
"""

from __future__ import annotations

import sys

from radt import run

print("radt: compatibility alias: radt.run.RADTBenchmark is radtrack.RADTBenchmark "
      "(docs/radt-migration.md)", file=sys.stderr)

__all__ = ["run"]
