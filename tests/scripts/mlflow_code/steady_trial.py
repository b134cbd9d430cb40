"""One MLflow run of its own that lasts --seconds (a trial a framework would open)."""
import argparse
import time

import mlflow

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=2.0)
p.add_argument("--tag", default="")
a = p.parse_args()
with mlflow.start_run(run_name="trial"):
    t0 = time.time()
    while time.time() - t0 < a.seconds:
        time.sleep(0.1)
    mlflow.log_metric("done", 1.0)
