"""``python -m radtrack.listeners NAME --interval 0.1 --devices 0``: print JSON-lines samples.

``NAME`` may join listeners with ``+`` (``smi+dcgm@1``): they then share one sampler
process (radtrack/listeners/runner.py: run_shared), each at its own ``@SECONDS`` or ``--interval``.
The command line is :class:`radtrack.listeners.protocol.ListenerLaunch`'s."""

from __future__ import annotations

import sys

from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.protocol import ListenerLaunch
from radtrack.listeners.runner import run, run_shared


def main(argv: list[str] | None = None) -> int:
    launch, resume = ListenerLaunch.parse(argv)

    def config(interval: float, prefix: str = "") -> ListenerConfig:
        return ListenerConfig(interval=interval, devices=list(launch.devices), pid=launch.pid,
                              outdir=launch.outdir, since=launch.since,
                              resume={k: v for k, v in resume.items() if k.startswith(prefix)})

    if len(launch.listeners) == 1:
        return run(launch.listeners[0].name, config(launch.interval), count=launch.count)
    # each listener gets only its own restart positions (keys start with its name)
    return run_shared([(c.name, config(c.interval or launch.interval, f"{c.name}/"))
                       for c in launch.listeners], count=launch.count)


if __name__ == "__main__":
    sys.exit(main())
