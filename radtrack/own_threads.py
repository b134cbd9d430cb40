"""radtrack's own processes keep their numerical libraries on one thread; what radtrack
starts for the user gets the user's environment as it was.

The launcher imports NumPy (through MLflow and pandas) in the background while the script
runs. OpenBLAS starts one thread per core as it loads, and each spins about 0.1 s waiting
for work: on a 64-core H200 host 63 threads, 7.5 CPU-s of a 2-s run, for figures radtrack
never computes on more than one core. Setting ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``
and ``MKL_NUM_THREADS`` to 1 in radtrack's own process before that import (:func:`limit`,
first thing in ``radtrack``'s entry points) avoids it; a value the user set is kept. The
processes radtrack starts for the user (the script, a SLURM job's environment) get
:func:`user_environ`: the environment without what :func:`limit` set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_OURS: dict[str, str] = {}  # what limit() set (the user had not)


def limit(environ: os._Environ[str] | dict[str, str] = os.environ) -> None:
    """One thread for this process's BLAS/OpenMP libraries, where the user set none."""
    for var in VARS:
        if var not in environ:
            environ[var] = "1"
            _OURS[var] = "1"


def user_environ(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``environ`` as the user gave it: without the variables :func:`limit` set."""
    return {k: v for k, v in environ.items() if not (k in _OURS and v == _OURS[k])}
