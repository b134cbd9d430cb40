"""A 100-kB param through RADTBenchmark (the row run) and through the script's own
mlflow.log_param (its own run); the command line may carry another (--blob)."""
import argparse

import mlflow

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--blob", default="")
p.parse_args()
with RADTBenchmark() as bench:
    bench.log_param("bench_long", "b" * 100_000)
    bench.log_param("bench_short", "ok")
with mlflow.start_run(run_name="own-long"):
    mlflow.log_param("own_long", "o" * 100_000)
    mlflow.log_param("own_short", "fine")
