"""Logs inside ``with mlflow.start_run()`` until it is stopped (--max-time)."""
import time

import mlflow

with mlflow.start_run(run_name="until-stopped"):
    step = 0
    while True:
        mlflow.log_metric("step", step, step=step)
        step += 1
        time.sleep(0.1)
