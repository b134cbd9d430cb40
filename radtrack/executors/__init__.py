"""Where a sheet's workloads run: ``local`` (this host, one after another) or ``slurm``
(one batch job per workload; each job runs the local path for its workload on its node).

``--executor`` > ``$RADTRACK_EXECUTOR`` > ``local``.
"""

from __future__ import annotations

import os

from radtrack.errors import RadtrackError

NAMES = ("local", "slurm")
ENV = "RADTRACK_EXECUTOR"


def resolve(flag: str | None) -> str:
    """The executor to use: the flag, else $RADTRACK_EXECUTOR, else local."""
    name = (flag or os.environ.get(ENV) or "local").strip().lower()
    if name not in NAMES:
        where = "--executor" if flag else f"${ENV}"
        raise RadtrackError(f"{where}: unknown executor {name!r}; use one of {', '.join(NAMES)}")
    return name
