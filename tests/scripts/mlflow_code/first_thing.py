"""Opens MLflow's store as its very first act, in a store that did not exist before the launch:
the launch makes it whole before this script starts, so its MLflow makes no tables."""
import sys
from pathlib import Path

existed = Path(sys.argv[1]).exists()
import mlflow  # noqa: E402

with mlflow.start_run(run_name="first-thing"):
    mlflow.log_param("store_existed_at_start", existed)
    mlflow.log_metric("x", 1.0)
