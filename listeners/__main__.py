"""``python -m radtrack.listeners NAME --interval 0.1 --devices 0``: print JSON-lines samples.

``NAME`` may join listeners with ``+`` (``smi+dcgm@1``): they then share one sampler
process (listeners/runner.py: run_shared), each at its own ``@SECONDS`` or ``--interval``."""

from __future__ import annotations

import argparse
import json
import sys

from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.runner import run, run_shared


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m radtrack.listeners",
                                description="Run one radtrack listener and print JSON-lines samples.")
    p.add_argument("name", help="listener name, e.g. smi, top, iostat, dcgm; several joined "
                                "with '+' (smi+dcgm@1) share one sampler process")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument("--devices", default="", help="GPUs as the run sees them: '0', '0+1', UUIDs")
    p.add_argument("--pid", type=int, default=None, help="root PID of the process tree to follow")
    p.add_argument("--count", type=int, default=None, help="stop after this many samples")
    p.add_argument("--outdir", default=None, help="folder for listener artifacts")
    p.add_argument("--resume", default="{}",
                   help="JSON {metric key: source timestamp} to pick up from after a restart")
    a = p.parse_args(argv)
    if a.interval <= 0:
        p.error("--interval must be > 0")
    devices = [d for d in a.devices.replace(",", "+").split("+") if d.strip()]
    from pathlib import Path

    resume = {str(k): int(v) for k, v in json.loads(a.resume).items()}

    def config(interval: float, prefix: str = "") -> ListenerConfig:
        return ListenerConfig(interval=interval, devices=devices, pid=a.pid,
                              outdir=Path(a.outdir) if a.outdir else None,
                              resume={k: v for k, v in resume.items() if k.startswith(prefix)})

    if "+" not in a.name:
        return run(a.name, config(a.interval), count=a.count)
    from radtrack.errors import RadtrackError
    from radtrack.listeners.registry import parse_names, split

    try:
        entries = [split(e) for e in parse_names(a.name) or []]
    except RadtrackError as exc:
        p.error(str(exc))
    # each listener gets only its own restart positions (keys start with its name)
    return run_shared([(n, config(every or a.interval, f"{n}/")) for n, every in entries],
                      count=a.count)


if __name__ == "__main__":
    sys.exit(main())
