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


# Test files that start the session's servers (PostgreSQL, mlflow server, SLURM) run on
# one xdist worker, so each server starts once per suite; the browser tests share one
# Chromium. Every other file is a group of its own: its module fixtures run once.
SERVER_FIXTURES = {"postgres_server", "postgres_uri", "mlflow_server_uri", "mlflow_auth_server",
                   "slurm_cluster"}


def _xdist_groups(items: list[pytest.Item]) -> None:
    """An ``xdist_group`` per test file for ``pytest -n N --dist loadgroup`` (make test)."""
    servers = {item.path for item in items
               if SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))}
    for item in items:
        if item.path in servers:
            group = "servers"
        elif "browser" in item.path.parts:
            group = "browser"
        else:
            group = item.path.name
        item.add_marker(pytest.mark.xdist_group(group))
    # the longest groups first, so no worker starts one near the end while the other idles
    first = {"servers": 0, "test_workloads.py": 1, "browser": 2}
    items.sort(key=lambda item: first.get(_group(item), 3))


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _xdist_groups(items)
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
