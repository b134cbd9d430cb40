"""The script picks its own experiment with set_experiment, then starts its run."""
import time

import mlflow

mlflow.set_experiment("my-project")
with mlflow.start_run():
    time.sleep(1.0)
    mlflow.log_metric("acc", 0.75)
