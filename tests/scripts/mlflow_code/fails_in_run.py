"""A script that fails while its run is active (no ``with``): MLflow's exit handler would
close the run FINISHED; the exit code says otherwise."""
import time

import mlflow

mlflow.start_run(run_name="doomed")
mlflow.log_metric("loss", 1.0)
time.sleep(0.8)
raise RuntimeError("diverged")
