"""Put the nvidia-smi / nvidia-cuda-mps-control doubles on PATH with a simulated host."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

DOUBLES = Path(__file__).resolve().parent
H100_UUID = "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"  # tests/data/h100/nvidia-smi_-L.txt
SECOND_UUID = "GPU-5cef8446-c81b-2eed-473a-7e74ea1e82e9"  # from the recorded MPS server log


def gpu(index: int = 0, uuid: str = H100_UUID, mig_mode: str = "Disabled",
        **extra: Any) -> dict[str, Any]:
    """One simulated H100 with the values of the recorded ``nvidia-smi -q``."""
    return {"index": index, "uuid": uuid, "name": "NVIDIA H100 80GB HBM3", "mig_mode": mig_mode,
            "driver": "580.159.04", "power_limit": 700.0, "power_min": 200.0,
            "power_max": 700.0, "max_sm": 1980, **extra}


class FakeHost:
    """The simulated host's state file and the log of every call to the doubles."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 gpus: list[dict[str, Any]] | None = None, **state: Any):
        self.state_file = tmp_path / "double-state.json"
        self.log_file = tmp_path / "double-calls.jsonl"
        self.write({"gpus": [gpu()] if gpus is None else gpus, "mig": [], **state})
        monkeypatch.setenv("PATH", f"{DOUBLES}{os.pathsep}{os.environ.get('PATH', '')}")
        monkeypatch.setenv("RADTRACK_DOUBLE_STATE", str(self.state_file))
        monkeypatch.setenv("RADTRACK_DOUBLE_LOG", str(self.log_file))

    @property
    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text())

    def write(self, state: dict[str, Any]) -> None:
        self.state_file.write_text(json.dumps(state))

    def update(self, **changes: Any) -> None:
        self.write({**self.state, **changes})

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.log_file.exists():
            return []
        entries = [json.loads(line) for line in self.log_file.read_text().splitlines()]
        return [e for e in entries if tool is None or e["tool"] == tool]

    def argvs(self, tool: str = "nvidia-smi", *, changing_only: bool = False) -> list[list[str]]:
        """argv of each call; ``changing_only`` drops read-only queries (-L, --query-gpu)."""
        out = []
        for e in self.calls(tool):
            argv = e["argv"]
            if changing_only and (argv in (["-L"], [], ["-q"]) or "-lgip" in argv
                                  or any(a.startswith("--query-gpu") for a in argv)):
                continue
            out.append(argv)
        return out

    def clear_log(self) -> None:
        self.log_file.unlink(missing_ok=True)
