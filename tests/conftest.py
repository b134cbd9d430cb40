"""Shared fixtures: a temporary SQLite MLflow store, GPU detection for the `gpu` marker.

Helpers for test modules live in support.py (``from support import radtrack_cli``); the
real-server fixtures (``postgres_uri``, ``mlflow_server_uri``) in servers.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support import HAS_GPU

pytest_plugins = ["servers", "slurm_cluster"]

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")
# One compute thread per process unless a test says otherwise: make test runs three workers
# on two cores, each starting launches of torch and NumPy scripts, whose OpenMP and BLAS pools
# (a thread per core each) then spin against each other. Three co-located torch smoke runs:
# 14.8 CPU-s and 8.5 s of wall with a pool per core, 10.2 CPU-s and 6.0 s with one thread.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


# make test runs ``pytest -n 3 --dist loadfile``: each test file on one xdist worker, so its
# module fixtures (a whole sheet launched once, the deployment walkthrough) run once.
# (``--dist loadgroup`` with ``xdist_group`` marks would also keep the server-starting and
# the browser files together, but pytest-xdist 3.8 under pytest 9 ignores those marks:
# every test became a group of its own and those module fixtures ran once per worker.)
# Session fixtures (PostgreSQL, mlflow server, SLURM, Chromium) start once per worker.
# Files are collected in the order below; pytest-xdist 3.8 hands them out by their test count
# (--loadscope-reorder, its default), this order breaking the ties:
# the longest first, so no worker starts one near the end while the other idles; then
# the files that start processes (launches, servers, a browser); the in-process files last,
# seconds each, to even out the two workers' ends. Per-file seconds from CI's 30 slowest
# tests (2-core VM, issue 47; docs/testing.md has the budget).
LONGEST_FIRST = ("test_deployment_doc.py",  # the walkthrough, servers started: 90 s in one setup
                 "test_workloads_tracked.py",  # every workload through one sheet: 65 s setup
                 "test_mlflow_code.py",  # two sheets of scripts that use MLflow: 57 + 26 s setups
                 "test_process_tree.py",  # the seven-workload sheet 52 s, --max-time 25 s
                 "test_team_identity.py",  # the basic-auth server, two users at once: 41 + 23 s
                 "test_store_creation.py",  # stress: 10 kills, 4 launches of three processes
                 "test_workloads.py",  # the plain runs' batch: 104 s at load 11
                 "test_sink.py", "test_teamserver.py",  # outages, the team-server benchmark
                 "test_slurm_nodes.py",  # 43 s in one test
                 "test_interference_intervals_e2e.py",  # one 13-row launch: 34 s
                 "test_store_faults.py", "test_cpu_attribution_e2e.py", "test_slurm_uncreated.py",
                 "test_mlflow_ui.py", "test_slurm_signals.py", "test_frontend_failures.py",
                 "test_framework_workers.py", "test_studies_power.py", "test_energy_error_e2e.py",
                 "test_studies_eda.py", "test_slurm_e2e.py", "test_slurm_resources.py",
                 "test_node_rejoins.py", "test_sheet_store_away.py", "test_cli_e2e.py")
# what a file that starts processes calls (its own, radtrack's, a server's, a browser's)
_STARTS_PROCESSES = re.compile(r"radtrack_cli\(|subprocess\.|Popen\(|_server\b|slurm_cluster|page\b")


def _longest_first(items: list[pytest.Item]) -> None:
    starts: dict[Path, bool] = {}

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        if name in LONGEST_FIRST:
            return LONGEST_FIRST.index(name)
        if item.path not in starts:
            starts[item.path] = ("browser" in item.path.parts
                                 or bool(_STARTS_PROCESSES.search(item.path.read_text(errors="replace"))))
        return len(LONGEST_FIRST) + (0 if starts[item.path] else 1)

    items.sort(key=rank)  # stable: each file's own order is kept, and its tests together


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    """With ``RADTRACK_TEST_CPU_LOG=FILE``: one JSON line per test (setup, call and teardown
    together) with its wall seconds and the CPU seconds of the worker and of the processes
    it waited for (launches, readers, scripts; not the shared servers), so that a suite's
    CPU cost can be put on its tests (docs/testing.md)."""
    path = os.environ.get("RADTRACK_TEST_CPU_LOG")
    if not path:
        yield
        return
    import json
    import resource
    import time

    def cpu() -> float:
        own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    t0, c0 = time.monotonic(), cpu()
    yield
    line = {"test": item.nodeid, "wall_s": round(time.monotonic() - t0, 2), "cpu_s": round(cpu() - c0, 2)}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
