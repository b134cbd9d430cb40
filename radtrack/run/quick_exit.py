"""The radtrack command leaves without tearing its interpreter down.

Once the launch has stored everything and said so, Python's shutdown still frees every
module the end loaded: with pandas, pyarrow and SciPy that took 0.5-1.0 s of wall time on
the 2-core VM (issue 47: ``python -c 'import pandas'`` spends 0.5-0.7 s in its teardown
there under load, ``import radtrack.cli`` 0.03 s), after the last line and before the shell
got its prompt back. So when ``main`` returns in the process of the ``radtrack`` command
itself (its console script, ``python -m radtrack``), :func:`leave` does what Python's
shutdown does that matters (non-daemon threads joined, every ``atexit`` handler run:
logging flushed, child processes reaped; stdout and stderr flushed; each store write was
committed when it was made) and ends the process with ``os._exit``. An exception keeps
Python's usual exit, and so does ``main`` called inside another program (the tests call it
in-process).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from pathlib import Path


def is_command() -> bool:
    """Whether this process is the ``radtrack`` command itself (not a program calling main)."""
    argv0 = sys.argv[0] if sys.argv else ""
    path = Path(argv0)
    return path.name == "radtrack" or (path.name == "__main__.py" and path.parent.name == "radtrack")


def leave(code: int) -> None:
    """End the command with ``code`` after Python's shutdown steps, short of the teardown."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:  # a Python without it: its usual exit
        return
    shutdown()  # non-daemon threads joined, as at interpreter exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader that went away: nothing more can reach it
    os._exit(code if isinstance(code, int) else 1)
