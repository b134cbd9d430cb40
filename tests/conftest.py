"""Shared fixtures: a temporary SQLite MLflow store, GPU detection for the `gpu` marker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
H100 = DATA / "h100"


def _has_nvidia_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return n > 0
    except Exception:
        return False


HAS_GPU = _has_nvidia_gpu()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="gpu: no NVIDIA GPU/NVML on this host")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite tracking store in tmp_path; also exported as MLFLOW_TRACKING_URI."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("RADTRACK_HOME", str(tmp_path / ".radtrack"))
    monkeypatch.chdir(tmp_path)
    return uri


def radtrack_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 240, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``python -m radtrack ARGS`` as a user would; returns the completed process."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "radtrack", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"radtrack {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc
