"""Shared state and call log of the nvidia-smi / nvidia-cuda-mps-control test doubles.

A test points RADTRACK_DOUBLE_STATE at a JSON file describing the simulated host (see
tests/doubles/README.md) and RADTRACK_DOUBLE_LOG at a JSON-lines file that receives one
line per call: tool, argv, the CUDA/MPS environment variables, and stdin.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

H100 = Path(__file__).resolve().parent.parent / "data" / "h100"
MIG = Path(__file__).resolve().parent.parent / "data" / "mig"
LOGGED_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MPS_PIPE_DIRECTORY",
              "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")


def state_path() -> Path:
    return Path(os.environ["RADTRACK_DOUBLE_STATE"])


def load_state() -> dict:
    return json.loads(state_path().read_text())


def save_state(state: dict) -> None:
    tmp = state_path().with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, state_path())


def log_call(tool: str, argv: list[str], stdin: str | None) -> None:
    log = os.environ.get("RADTRACK_DOUBLE_LOG")
    if not log:
        return
    entry = {"tool": tool, "argv": argv,
             "env": {k: os.environ[k] for k in LOGGED_ENV if k in os.environ},
             "stdin": stdin}
    with open(log, "a") as f:
        f.write(json.dumps(entry) + "\n")


def finish(out: str = "", rc: int = 0) -> None:
    sys.stdout.write(out)
    sys.exit(rc)
