"""Workload process entry: wait at the launcher's barrier, then run the script as __main__.

``python -m radtrack.bootstrap SCRIPT [ARGS...]`` with ``RADTRACK_BARRIER_FD`` naming a
pipe the launcher writes one byte to once every row's process exists: co-located rows
start together. The release time is written to ``RADTRACK_RELEASE_FILE`` so the
launcher can log the start skew.
"""

from __future__ import annotations

import os
import runpy
import sys
import time

BARRIER_FD = "RADTRACK_BARRIER_FD"
RELEASE_FILE = "RADTRACK_RELEASE_FILE"


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m radtrack.bootstrap SCRIPT [ARGS...]")
    script = sys.argv[1]
    fd = os.environ.pop(BARRIER_FD, None)
    if fd is not None:
        try:
            got = os.read(int(fd), 1)
            os.close(int(fd))
        except OSError:
            # a wrapper in between (a profiler) closed the inherited pipe: no barrier then
            got = b"g"
        if not got:  # launcher went away before releasing us
            sys.exit(130)
    released = time.time()
    os.environ["RADTRACK_START_TIME"] = repr(released)
    release_file = os.environ.pop(RELEASE_FILE, None)
    if release_file:
        with open(release_file, "w") as f:
            f.write(repr(released))
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
