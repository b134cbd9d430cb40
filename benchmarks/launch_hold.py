"""How long the launcher holds a launch's scripts at their barrier after spawning them: the
time from ``spawn_rows`` returning to ``release`` (radtrack/run/launch.py), in the launcher's
own process, for one launch (issue 25: what the launcher does there is on the script's path
whenever the script's interpreter is ready first).

  python benchmarks/launch_hold.py -- <radtrack arguments>

Prints ``HOLD_MS <ms>`` on stderr at the release. A measuring aid, not part of the product.
"""

from __future__ import annotations

import runpy
import sys
import time
from typing import Any

import radtrack.run.launch as launch

_spawned: list[float] = []
_spawn_rows, _release = launch.spawn_rows, launch.release


def _spawn(*args: Any, **kwargs: Any) -> Any:
    out = _spawn_rows(*args, **kwargs)
    _spawned.append(time.monotonic())
    return out


def _open(*args: Any, **kwargs: Any) -> Any:
    print("HOLD_MS", round(1e3 * (time.monotonic() - _spawned[-1]), 1), file=sys.stderr, flush=True)
    return _release(*args, **kwargs)


def main() -> None:
    launch.spawn_rows, launch.release = _spawn, _open
    sys.argv = ["radtrack", *sys.argv[sys.argv.index("--") + 1:]]
    runpy.run_module("radtrack", run_name="__main__")


if __name__ == "__main__":
    main()
