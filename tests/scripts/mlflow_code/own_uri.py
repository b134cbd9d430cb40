"""The script sets its own tracking URI (argv[1]) before logging."""
import sys
import time

import mlflow

mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("elsewhere")
with mlflow.start_run(run_name="own-store"):
    time.sleep(1.0)
    mlflow.log_metric("acc", 0.5)
