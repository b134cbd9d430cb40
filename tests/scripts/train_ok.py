"""A tiny training script: RADTBenchmark metrics, plain mlflow metric, output, args."""
import argparse
import sys

from radtrack import RADTBenchmark

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--fast", action="store_true")
p.add_argument("name", nargs="?", default="x")
a = p.parse_args()
print(f"hello from train_ok batch={a.batch_size} name={a.name}")
print("to stderr", file=sys.stderr)
with RADTBenchmark() as run:
    for epoch in range(3):
        run.log_metric("loss", 1.0 / (epoch + 1), epoch)
    run.log_metrics({"throughput_samples_per_s": 123.0}, epoch=2)
    run.set_tag("custom", "yes")
    if run.active:
        import mlflow

        mlflow.log_metric("plain_mlflow_metric", 7.0)
print("done")
