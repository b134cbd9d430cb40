"""A script written for radT, as radT's examples document it; runs unchanged under radtrack.

Usage: radt_style.py [--epochs N] [--batch-size B]
"""
import argparse
from pathlib import Path

import radt

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--batch-size", type=int, default=8)
a = p.parse_args()

with radt.run.RADTBenchmark() as run:
    notes = Path("radt_notes.txt")
    notes.write_text(f"batch size {a.batch_size}\n")
    run.log_artifact(str(notes))
    for epoch in range(a.epochs):
        print(f"epoch {epoch}", flush=True)
        run.log_metric("Metric A", 0.5 * epoch, epoch)
        run.log_metrics({"loss": 1.0 / (epoch + 1)}, epoch)
print("radt_style done")
