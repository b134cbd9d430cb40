"""Shared fixtures: a temporary SQLite MLflow store, GPU detection for the `gpu` marker.

Helpers for test modules live in support.py (``from support import radtrack_cli``); the
real-server fixtures (``postgres_uri``, ``mlflow_server_uri``) in servers.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import HAS_GPU

pytest_plugins = ["servers", "slurm_cluster"]

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")


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
