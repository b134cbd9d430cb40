"""``python -m radtrack.listeners NAME --interval 0.1 --devices 0``: print JSON-lines samples."""

from __future__ import annotations

import argparse
import json
import sys

from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.runner import run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m radtrack.listeners",
                                description="Run one radtrack listener and print JSON-lines samples.")
    p.add_argument("name", help="listener name, e.g. smi, top, iostat, dcgm")
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
    cfg = ListenerConfig(interval=a.interval, devices=devices, pid=a.pid,
                         outdir=Path(a.outdir) if a.outdir else None,
                         resume={str(k): int(v) for k, v in json.loads(a.resume).items()})
    return run(a.name, cfg, count=a.count)


if __name__ == "__main__":
    sys.exit(main())
