"""`python -m radtrack.analysis.report` as a user runs it, on a seeded store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from support import radtrack_cli
from test_analysis_seed import T0, Row, seed_workload

from radtrack.analysis.report import main
from radtrack.analysis.report_text import REPORT_TABLES
from radtrack.store import newstore


def report(*args: str, cwd: Path, uri: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    if uri is not None:
        env["MLFLOW_TRACKING_URI"] = uri
    return subprocess.run([sys.executable, "-m", "radtrack.analysis.report", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def seeded(store, tmp_path, monkeypatch) -> dict[str, list[str]]:
    monkeypatch.setenv("RADTRACK_CACHE_DIR", str(tmp_path / "cache"))
    newstore.prepare(store)  # radtrack's template: no MLflow migrations per test (1.3 CPU-s)
    client = MlflowClient(store)
    solo = seed_workload(client, "coloc", 1, [Row(duration_s=10, throughput=100.0)])
    pair = seed_workload(client, "coloc", 2, [Row(duration_s=15, power_w=300.0, throughput=60.0,
                                                  collocation="mps"),
                                              Row(duration_s=15, power_w=300.0, throughput=60.0,
                                                  collocation="mps")], start=T0 + 100)
    repeat = seed_workload(client, "coloc", 3, [Row(duration_s=12, throughput=80.0)], start=T0 + 200)
    return {"solo": solo + repeat, "pair": pair}


def here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """:func:`main` in this process (the ``store`` fixture's working folder and URI): the
    module's process is tested by the two tests below that run it as a user does."""
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


def test_table_and_csv_files(seeded, tmp_path, store, capsys):
    proc = here(capsys, "coloc", "--format", "csv", "--out", "out/report.csv")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "experiment coloc: 4 run(s)" in text
    assert "Per-run summary" in text and "coloc-2 B" in text
    interference_block = text.split("Co-location interference")[1].split("Run-to-run")[0]
    assert "coloc-2 A" in interference_block and " 1.50 " in interference_block
    assert "throughput_samples_per_s" in interference_block
    variability_block = text.split("Run-to-run variability")[1]
    assert "batch-size=64" in variability_block and "NVIDIA H100 80GB HBM3" in variability_block
    runs = pd.read_csv(tmp_path / "out/report.csv")
    assert list(runs["run_name"]) == ["coloc-1 A", "coloc-2 A", "coloc-2 B", "coloc-3 A"]
    assert runs.set_index("run_name").loc["coloc-1 A", "energy_j"] == pytest.approx(2000.0)
    inter = pd.read_csv(tmp_path / "out/report.interference.csv")
    assert inter["slowdown"].tolist() == pytest.approx([1.5, 1.5])
    var = pd.read_csv(tmp_path / "out/report.variability.csv")
    # the solo repeats, and the two identical rows that ran side by side in workload 2
    assert var["n"].tolist() == [2, 2]
    assert sorted(var["rows_in_workload"]) == [1, 2]


def test_json_and_parquet_and_workload_filter(seeded, tmp_path, store, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///nowhere.db")  # --tracking-uri wins
    proc = here(capsys, "coloc", "--workload", "2", "--format", "json", "--out", "r.json",
                "--tracking-uri", store)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    # every table, empty or not, and what each column is: one schema whatever the data
    assert list(doc) == [*REPORT_TABLES, "columns"] and doc["checks"] == []
    # the seeded pair has solo baselines but was recorded without co-location accounting
    assert doc["workloads"][0]["stp"] == pytest.approx(2 / 1.5)
    assert "no measured workload energy" in doc["workloads"][0]["note"]
    assert [r["run_name"] for r in doc["runs"]] == ["coloc-2 A", "coloc-2 B"]
    assert doc["runs"][0]["start_time"].startswith("2025-06-15T15:08:20")
    assert doc["interference"][0]["solo_energy_per_unit_j"] == pytest.approx(
        (2000 / 1000 + 2400 / 960) / 2)
    assert [v["rows_in_workload"] for v in doc["variability"]] == [2]
    proc = here(capsys, "coloc", "--format", "parquet", "--out", "r.parquet", "--tracking-uri", store)
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 4
    assert len(pd.read_parquet(tmp_path / "r.interference.parquet")) == 2


def test_target_and_correlate_in_process(seeded, store, capsys, tmp_path):
    # in-process: the lead's `radtrack report` calls main(argv) the same way
    assert main(["coloc", "--target", "smi/gpu0/mem_used_mib=1500"]) == 0
    out = capsys.readouterr().out
    assert "time_to_target_s" in out
    run = seeded["solo"][0]
    assert main(["--correlate", run, "--metrics", "smi/gpu0/mem_used_mib,smi/gpu0/energy_j",
                 "--out", str(tmp_path / "c.csv"), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pearson correlation, 1 s bins")
    matrix = pd.read_csv(tmp_path / "c.csv").set_index("metric")
    # both ramp linearly with time in the seeded run
    assert matrix.loc["smi/gpu0/mem_used_mib", "smi/gpu0/energy_j"] == pytest.approx(1.0)


@pytest.fixture
def small(store) -> str:
    newstore.prepare(store)
    return seed_workload(MlflowClient(store), "coloc", 1, [Row(duration_s=2, parquet=False)])[0]


@pytest.mark.parametrize("args, message", [
    (["nope"], "experiment 'nope' not found"),
    (["--correlate", "deadbeef"], "run 'deadbeef' not found"),
    (["coloc", "--workload", "9"], "experiment 'coloc' has no workload 9 (workloads: 1)"),
    (["coloc", "--format", "parquet"], "--format parquet needs --out FILE"),
    ([], "name an experiment"),
])
def test_bad_input_exits_2_with_one_line(small, capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"radtrack report: {message}") and err.count("\n") == 1


def test_unknown_metric_in_subprocess(small, tmp_path, store):
    run = small
    proc = report("--correlate", run, "--metrics", "smi/gpu0/power_w,gpu/nope", cwd=tmp_path,
                  uri=store)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"radtrack report: unknown metric 'gpu/nope' for run {run}; "
        "see radtrack.analysis.list_metrics"]


def test_report_output_is_the_report_only(seeded, tmp_path, store):
    # MLflow draws a "Downloading artifacts" bar per trace when tqdm is installed (it is in
    # nearly every ML environment, and in the test extra, so this test can see it).
    import tqdm  # noqa: F401

    proc = radtrack_cli("report", "coloc", cwd=tmp_path, env={"MLFLOW_TRACKING_URI": store})
    assert proc.returncode == 0, proc.stderr
    assert "Per-run summary" in proc.stdout
    assert "Downloading artifacts" not in proc.stderr + proc.stdout
    assert proc.stderr == ""
