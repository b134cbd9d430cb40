"""Several trials in one script, each with a nested evaluation run."""
import time

import mlflow

for trial in range(2):
    with mlflow.start_run(run_name=f"trial-{trial}"):
        mlflow.log_param("trial", trial)
        for step in range(3):
            time.sleep(0.25)
            mlflow.log_metric("loss", (trial + 1) / (step + 1), step=step)
        with mlflow.start_run(run_name=f"eval-{trial}", nested=True):
            time.sleep(0.3)
            mlflow.log_metric("acc", 0.5 + trial / 10)
    time.sleep(0.5)  # between trials: no run is active
