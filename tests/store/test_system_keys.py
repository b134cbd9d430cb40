"""Listener series stored under MLflow's ``system/`` prefix; readers take both key forms.

One store serves the module: two seeded runs with the same samples under the two key forms,
and a run launched with top; the three ``report`` commands run once, together."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from support import radtrack_cli
from synthetic import new_store, seed_workload

from radtrack.analysis import data as analysis
from radtrack.frontend.data import DataSource
from radtrack.vocab.schema import canonical_key, stored_key, stored_keys

BUSY = Path(__file__).parents[1] / "scripts" / "busy.py"
METRICS = ["smi/gpu0/power_w", "top/cpu_pct"]


def test_key_forms() -> None:
    assert stored_key("smi/gpu0/power_w") == "system/smi/gpu0/power_w"
    assert stored_key("system/smi/gpu0/power_w") == "system/smi/gpu0/power_w"
    assert canonical_key("system/smi/gpu0/power_w") == "smi/gpu0/power_w"
    assert canonical_key("smi/gpu0/power_w") == "smi/gpu0/power_w"
    # MLflow's own system metrics and the script's metrics keep their names
    assert canonical_key("system/cpu_utilization_percentage") == "system/cpu_utilization_percentage"
    assert canonical_key("loss") == "loss" and canonical_key("summary/duration_s") == "summary/duration_s"
    assert stored_keys(["loss", "system/top/cpu_pct", "top/cpu_pct"]) == {
        "loss": "loss", "top/cpu_pct": "system/top/cpu_pct"}


@pytest.fixture(scope="module")
def both_forms(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two RUNNING runs (no Parquet trace yet: everything from MLflow's history), identical
    samples, one stored the current way and one as radtrack stored it before ``system/``."""
    root = tmp_path_factory.mktemp("key-forms")
    uri = new_store(root)
    new = seed_workload(uri, "forms", 1, ["A"], metrics=METRICS, points=40, status="RUNNING",
                        artifact_root=root / "a", epochs=3)[0]
    old = seed_workload(uri, "forms", 2, ["A"], metrics=METRICS, points=40, status="RUNNING",
                        artifact_root=root / "a", epochs=3, legacy_keys=True)[0]
    client = MlflowClient(uri)
    assert "system/top/cpu_pct" in client.get_run(new.run_id).data.metrics
    assert "top/cpu_pct" in client.get_run(old.run_id).data.metrics
    return {"uri": uri, "new": new, "old": old, "root": root}


def test_analysis_and_frontend_read_both_forms(both_forms) -> None:
    uri, new, old = both_forms["uri"], both_forms["new"], both_forms["old"]
    for run in (new, old):
        assert analysis.list_metrics([run.run_id], tracking_uri=uri) == sorted(
            [*METRICS, "loss", "throughput_samples_per_s"])
    frame = analysis.load_series([new.run_id, old.run_id], METRICS, tracking_uri=uri)
    a = frame[frame["run_id"] == new.run_id].reset_index(drop=True)
    b = frame[frame["run_id"] == old.run_id].reset_index(drop=True)
    assert len(a) == len(b) == 80
    assert list(a["metric"]) == list(b["metric"]) and list(a["step"]) == list(b["step"])
    runs = analysis.load_runs("forms", tracking_uri=uri)
    assert runs["metric.top/cpu_pct"].notna().all()
    assert not any(c.startswith("metric.system/") for c in runs.columns)
    source = DataSource(uri)
    assert source.metric_keys([new.run_id]) == source.metric_keys([old.run_id])
    got = source.series([new.run_id, old.run_id], METRICS)
    for metric in METRICS:
        assert len(got[(new.run_id, metric)]) == len(got[(old.run_id, metric)]) == 40


@pytest.fixture(scope="module")
def launched(both_forms: dict) -> dict:
    """busy.py launched with top into the key-forms store (experiment 'sys'); then the three
    ``report --correlate`` commands (the launched run, the new-form and the old-form run)
    start together, each its own radtrack process."""
    root, uri = both_forms["root"], both_forms["uri"]
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(root / ".radtrack")}
    p = radtrack_cli("-e", "sys", "-l", "top", "--interval", "0.2", str(BUSY), "1", cwd=root, env=env)
    assert p.returncode == 0, p.stderr
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("sys")
    run = next(r for r in c.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    calls = [("report", "--correlate", run.info.run_id, "--metrics", "top/cpu_pct,top/mem_used_mib")]
    calls += [("report", "--correlate", r.run_id, "--metrics", ",".join(METRICS), "--tracking-uri", uri)
              for r in (both_forms["new"], both_forms["old"])]
    with ThreadPoolExecutor(len(calls)) as pool:
        reports = list(pool.map(lambda args: radtrack_cli(*args, cwd=root, env=env), calls))
    return {"run": run, "client": c, "uri": uri, "report": reports[0], "forms": reports[1:]}


def test_launcher_stores_listener_series_under_system(launched: dict, tmp_path: Path) -> None:
    c, run = launched["client"], launched["run"]
    keys = set(run.data.metrics)
    series = {k for k in keys if not k.startswith("summary/")}
    assert "system/top/cpu_pct" in series and "system/top/mem_used_mib" in series
    assert all(k.startswith("system/top/") for k in series), series
    assert "summary/top/cpu_pct/mean" in keys  # summaries keep their keys
    history = c.get_metric_history(run.info.run_id, "system/top/mem_used_mib")
    trace = pd.read_parquet(c.download_artifacts(run.info.run_id, "telemetry/top.parquet",
                                                 str(tmp_path)))
    assert "top/mem_used_mib" in trace.columns and not any(
        col.startswith("system/") for col in trace.columns)  # the trace keeps the bare form
    assert sorted(h.step for h in history) == trace["step"].tolist()
    # readers name it as before
    assert "top/mem_used_mib" in analysis.list_metrics([run.info.run_id], tracking_uri=launched["uri"])
    report = launched["report"]
    assert report.returncode == 0, report.stderr
    assert "top/mem_used_mib" in report.stdout


def test_report_reads_both_forms(launched: dict) -> None:
    for p in launched["forms"]:
        assert p.returncode == 0, p.stderr
        matrix = p.stdout.splitlines()[2:]  # title, column header, one row per metric
        assert [line.split()[0] for line in matrix] == METRICS, p.stdout
        assert "NaN" not in p.stdout and p.stderr == ""
