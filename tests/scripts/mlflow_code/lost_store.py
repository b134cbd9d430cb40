"""The script logs to a store of its own that is gone by the time radtrack binds telemetry."""
import shutil
import tempfile
import time

import mlflow

folder = tempfile.mkdtemp()
mlflow.set_tracking_uri(f"sqlite:///{folder}/private.db")
with mlflow.start_run(run_name="private"):
    time.sleep(0.6)
    mlflow.log_metric("acc", 0.1)
shutil.rmtree(folder)
