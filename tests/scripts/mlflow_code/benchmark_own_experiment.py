"""RADTBenchmark in a script that also picked its own experiment and logs its own params."""
import argparse
import time

import mlflow

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
mlflow.set_experiment("bench-exp")
with RADTBenchmark() as run:
    run.log_params(vars(args))
    for epoch in range(2):
        time.sleep(0.3)
        run.log_metric("loss", 1.0 / (epoch + 1), epoch)
