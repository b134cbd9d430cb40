"""``with RADTBenchmark()`` does not hold a script that never calls MLflow itself: it neither
imports MLflow in the script's process nor waits for the launcher to create the row run
(that held the first step 3-4 s); its values go through the spool into the row run all the
same, and a plain ``mlflow`` call the script makes later still lands in the row run
(tests/scripts/train_ok.py in test_cli_e2e.py). Through the real CLI and a SQLite store."""

from __future__ import annotations

from mlflow import MlflowClient
from support import radtrack_cli

SCRIPT = """
import sys
from radtrack import RADTBenchmark
with RADTBenchmark() as run:
    print("MLFLOW_IMPORTED", "mlflow" in sys.modules, flush=True)
    for epoch in range(3):
        run.log_metric("loss", 1.0 / (epoch + 1), epoch)
    run.log_params({"lr": 0.1})
print("MLFLOW_AT_END", "mlflow" in sys.modules, flush=True)
"""

LATE_IMPORT = """
from radtrack import RADTBenchmark
with RADTBenchmark() as run:
    run.log_metric("loss", 0.5, 0)
    import mlflow  # the row run becomes MLflow's active run as the import completes
    print("ACTIVE", mlflow.active_run().info.run_id, flush=True)
    mlflow.log_metric("plain", 3.0)
"""


def _row(store: str, experiment: str):
    client = MlflowClient(store)
    exp = client.get_experiment_by_name(experiment)
    return next(r for r in client.search_runs([exp.experiment_id])
                if r.data.tags.get("radtrack.role") == "row")


def test_a_script_that_never_calls_mlflow_never_imports_it(store, tmp_path):
    (tmp_path / "s.py").write_text(SCRIPT)
    p = radtrack_cli("-e", "bstart", "-l", "none", str(tmp_path / "s.py"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "MLFLOW_IMPORTED False" in p.stdout and "MLFLOW_AT_END False" in p.stdout, p.stdout
    row = _row(store, "bstart")
    assert row.data.metrics["loss"] == 1.0 / 3
    assert row.data.params["lr"] == "0.1"
    history = MlflowClient(store).get_metric_history(row.info.run_id, "loss")
    assert sorted(m.step for m in history) == [0, 1, 2]


def test_mlflow_imported_inside_the_block_logs_to_the_row_run(store, tmp_path):
    (tmp_path / "s.py").write_text(LATE_IMPORT)
    p = radtrack_cli("-e", "blate", "-l", "none", str(tmp_path / "s.py"))
    assert p.returncode == 0, p.stderr[-3000:]
    row = _row(store, "blate")
    assert f"ACTIVE {row.info.run_id}" in p.stdout, p.stdout
    assert row.data.metrics["plain"] == 3.0 and row.data.metrics["loss"] == 0.5
