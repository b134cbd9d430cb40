"""Two runs renamed after their start: one by the mlflow.runName tag, one by update_run."""
import time

import mlflow

with mlflow.start_run(run_name="tmp") as run:
    mlflow.set_tag("mlflow.runName", "renamed-by-tag")
    time.sleep(0.3)
with mlflow.start_run(run_name="tmp2") as run:
    mlflow.MlflowClient().update_run(run.info.run_id, name="renamed-by-update")
    time.sleep(0.3)
