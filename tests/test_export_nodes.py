"""``radtrack export`` of a multi-node run (issue 41): a row per node and step, a ``node``
column, each node's series under the plain names (node K's from its own trace,
``telemetry/node<K>.<listener>.parquet``), ``--metrics`` naming them for every node; through
the real CLI on a real SQLite store holding a two-node run as radtrack stores one
(tests/node_runs.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from node_runs import POINTS, seed_nodes_experiment


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri, _, _ = seed_nodes_experiment(tmp_path_factory.mktemp("export-nodes"))
    return uri


def _export(uri: str, out: Path, *args: str) -> pd.DataFrame:
    p = subprocess.run([sys.executable, "-m", "radtrack", "export", "nodes", "--tracking-uri", uri,
                        "--format", "csv", "--out", str(out), *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return pd.read_csv(out)


def test_a_two_node_run_exports_a_row_per_node_and_step(two_nodes: str, tmp_path: Path) -> None:
    frame = _export(two_nodes, tmp_path / "all.csv")
    cols = list(frame.columns)
    assert cols[cols.index("collocation") + 1] == "node"
    assert not any(c.startswith("node1/") for c in cols), cols
    multi = frame[frame["workload"] == 1]
    single = frame[frame["workload"] == 2]
    assert sorted(multi["node"].unique()) == [0, 1] and set(single["node"]) == {0}
    # node 1's own trace, full resolution (not only the last sample history keeps)
    one = multi[multi["node"] == 1]
    assert len(one) >= POINTS - 1 and one["top/cpu_pct"].notna().sum() >= POINTS - 1
    assert one["smi/gpu0/power_w"].dropna().unique().tolist() == [321.0]  # node_runs.NODE1_POWER
    assert (multi[multi["node"] == 0]["smi/gpu0/power_w"] != 321.0).all()
    # --metrics names a series for every node
    picked = _export(two_nodes, tmp_path / "cpu.csv", "--metrics", "top/cpu_pct")
    counts = picked[picked["workload"] == 1].groupby("node")["top/cpu_pct"].count()
    assert counts.to_dict() == {0: counts[0], 1: counts[1]} and counts[1] >= POINTS - 1
    assert "smi/gpu0/power_w" not in picked.columns
