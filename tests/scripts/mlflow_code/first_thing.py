"""Opens MLflow's store as its very first act, in a store that did not exist when it started:
the launcher makes the tables alongside, and this script's MLflow must wait for them."""
import sys
from pathlib import Path

existed = Path(sys.argv[1]).exists()
import mlflow  # noqa: E402

with mlflow.start_run(run_name="first-thing"):
    mlflow.log_param("store_existed_at_start", existed)
    mlflow.log_metric("x", 1.0)
