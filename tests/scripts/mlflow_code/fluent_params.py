"""Plain fluent MLflow: own start_run, log_params(vars(args)) from argparse, a metric, an artifact."""
import argparse
import time

import mlflow

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--amp", action="store_true")
p.add_argument("--steps", type=int, default=4)
args = p.parse_args()
with mlflow.start_run(run_name="fluent-run"):
    mlflow.log_params(vars(args))
    for step in range(args.steps):
        time.sleep(0.25)
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
    mlflow.log_text("hello", "notes/hello.txt")
