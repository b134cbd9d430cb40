"""A child script: its own MLflow run, a few metrics over about 0.8 s."""
import sys
import time

import mlflow

with mlflow.start_run(run_name=sys.argv[1]):
    for step in range(4):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        time.sleep(0.2)
