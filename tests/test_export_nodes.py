"""``radtrack export`` and ``radtrack report`` of a multi-node run (issue 41), through the real
CLI on a real SQLite store holding a two-node run as radtrack stores one (tests/node_runs.py),
seeded once for both.

Export: a row per node and step, a ``node`` column, each node's series under the plain names
(node K's from its own trace, ``telemetry/node<K>.<listener>.parquet``), ``--metrics`` naming
them for every node. Report: the per-run summary's row per node (its own series' figures,
its stored span and GPU energy, its host) after the run's row (the stored totals, energy
summed over the nodes), a one-node run as it always was."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from node_runs import KEYS, NODE1_ENERGY_J, NODE1_POWER, NODES_SPAN_S, POINTS, seed_nodes_experiment
from support import report_here, run_cli
from synthetic import seed_workload

from radtrack.vocab import schema


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    root = tmp_path_factory.mktemp("export-nodes")
    uri, multi, single = seed_nodes_experiment(root)
    # workload 3: a two-node run whose node 1 was lost before it stored anything
    (lost,) = seed_workload(uri, "nodes", 3, ["A"], metrics=KEYS, points=POINTS, epochs=0,
                            status="KILLED", artifact_root=root / "artifacts", start=1_700_002_000.0)
    client = MlflowClient(tracking_uri=uri)
    for name, value in {schema.NODES: "2", schema.node_tag(0, "status"): "FINISHED",
                        schema.node_tag(1, "status"): "KILLED", schema.node_tag(1, "why"): "lost",
                        schema.NODES_FAILED: "node1: lost"}.items():
        client.set_tag(lost.run_id, name, value)
    return uri, multi, single, lost


@pytest.fixture(scope="module")
def two_nodes(seeded: tuple) -> str:
    return seeded[0]


def _export(uri: str, out: Path, *args: str) -> pd.DataFrame:
    # in-process (support.run_cli): an interpreter start and MLflow's import per call saved
    p = run_cli("export", "nodes", "--tracking-uri", uri, "--format", "csv", "--out", str(out), *args)
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


def test_the_report_has_a_row_per_node_and_the_runs_totals(seeded, tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    uri, multi, single, lost = seeded
    p = report_here(monkeypatch, capsys, "nodes", "--tracking-uri", uri, "--format", "json",
                    "--out", str(tmp_path / "report.json"))
    assert p.returncode == 0, p.stderr
    stored = MlflowClient(tracking_uri=uri).get_run(multi.run_id).data.metrics
    runs = pd.DataFrame(json.loads((tmp_path / "report.json").read_text())["runs"])
    mine = runs[runs["run_id"] == multi.run_id]
    assert list(mine["node"]) == ["all", "0", "1"] and list(mine["host"]) == ["", "gpu-a", "gpu-b"]
    total, node0, node1 = (row for _, row in mine.iterrows())
    # each node's figures: its own series (node 1's constant power), its stored span and energy
    assert node1["power_w_mean"] == pytest.approx(NODE1_POWER)
    assert node0["power_w_mean"] != pytest.approx(NODE1_POWER)
    for node, row in ((0, node0), (1, node1)):
        assert row["gpu_energy_j"] == pytest.approx(stored[schema.node_summary_key(node, "gpu_energy_j")])
        assert row["duration_s"] == pytest.approx(stored[schema.node_summary_key(node, "duration_s")])
        assert row["energy_j"] == pytest.approx(row["gpu_energy_j"], rel=1e-6)  # solo, GPU only
        assert row["samples"] == POINTS and row["status"] == "FINISHED"
    assert node1["gpu_energy_j"] == pytest.approx(NODE1_ENERGY_J) and node1["duration_s"] == POINTS - 1
    # the run's row: the stored totals, its energy the nodes' sum; power and CPU per node only
    assert total["gpu_energy_j"] == pytest.approx(stored[schema.nodes_total_key("gpu_energy_j")])
    assert total["energy_j"] == pytest.approx(node0["energy_j"] + node1["energy_j"])
    assert total["duration_s"] == pytest.approx(NODES_SPAN_S) and total["status"] == "FINISHED"
    assert pd.isna(total["power_w_mean"]) and pd.isna(total["cpu_pct_mean"])
    assert node1["cpu_pct_mean"] == pytest.approx(30.0)  # its linspace 10..50
    other = runs[runs["run_id"] == single.run_id]
    assert len(other) == 1 and other["node"].iloc[0] == ""
    assert np.isfinite(other["power_w_mean"].iloc[0])
    # a node that stored nothing: its row says so, the run has no energy total
    gone = runs[runs["run_id"] == lost.run_id]
    assert list(gone["node"]) == ["all", "0", "1"]
    assert list(gone["status"]) == ["KILLED", "FINISHED", "KILLED"]
    assert np.isfinite(gone["energy_j"].iloc[1]) and gone["energy_j"].iloc[[0, 2]].isna().all()
    assert gone["power_w_mean"].iloc[2] is None or np.isnan(gone["power_w_mean"].iloc[2])
    # the printed view: within 120 columns, the node and its host next to the run's name
    text = p.stdout
    assert all(len(line) <= 120 for line in text.splitlines())
    assert "experiment nodes: 3 run(s)" in text
    summary = text.split("Per-run summary", 1)[1].split("Co-location", 1)[0]
    lines = [line.split() for line in summary.splitlines() if line.startswith(multi.run_name)]
    assert [line[2:4] for line in lines[:3]] == [["all", "FINISHED"], ["0", "gpu-a"], ["1", "gpu-b"]]
    assert "per node on a multi-node run" in summary
    assert "not every node's energy is known: no total (its node rows) (nodes-3 A)" in " ".join(
        summary.split())
    # a report of one-node runs only: no node column
    alone = report_here(monkeypatch, capsys, "nodes", "--workload", "2", "--tracking-uri", uri)
    assert alone.returncode == 0, alone.stderr
    header = alone.stdout.split("Per-run summary\n", 1)[1].splitlines()[0].split()
    assert header[:3] == ["run_name", "status", "sharing"] and "node" not in header
