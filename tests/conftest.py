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


# make test runs ``pytest -n 2 --dist loadfile``: each test file on one xdist worker, so its
# module fixtures (a whole sheet launched once, the deployment walkthrough) run once.
# (``--dist loadgroup`` with ``xdist_group`` marks would also keep the server-starting and
# the browser files together, but pytest-xdist 3.8 under pytest 9 ignores those marks:
# every test became a group of its own and those module fixtures ran once per worker.)
# Session fixtures (PostgreSQL, mlflow server, SLURM, Chromium) start once per worker.
# The longest files go first, so no worker starts one near the end while the other idles
# (per-file seconds alone on the 2-core VM, issue 47; docs/testing.md has the budget).
LONGEST_FIRST = ("test_workloads_tracked.py",  # every workload through one sheet: 437 s at load 11
                 "test_mlflow_code.py",  # 216 s: three sheets of scripts that use MLflow
                 "test_store_creation.py", "test_team_identity.py",  # 196 s each
                 "test_deployment_doc.py",  # 171 s: the walkthrough, servers started
                 "test_sink.py", "test_teamserver.py",  # 164 s, 154 s
                 "test_workloads.py",  # the plain runs' batch: 104 s at load 11
                 "test_process_tree.py", "test_slurm_e2e.py", "test_slurm_signals.py",
                 "test_studies_power.py")


def _longest_first(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's own order is kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _longest_first(items)
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
