"""Three 1-s trials, each an MLflow run of the script's own, burning CPU (so the host's and
the process's CPU series move within each trial), 0.3 s apart."""
import time

import mlflow

for trial in range(3):
    with mlflow.start_run(run_name=f"second-{trial}"):
        end, x = time.time() + 1.0, 0
        while time.time() < end:
            x += 1
        mlflow.log_metric("iterations", x)
    time.sleep(0.3)
