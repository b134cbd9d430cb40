"""For each row run of an experiment: when its script started, when smi's energy series
begins, and what smi recovered before its first counter reading (radtrack/listeners/energy_backfill.py).

  python benchmarks/energy_start_check.py EXPERIMENT [--tracking-uri URI]
"""

from __future__ import annotations

import argparse
import tempfile

import pandas as pd
from mlflow import MlflowClient


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--tracking-uri", default=None)
    a = p.parse_args()
    client = MlflowClient(a.tracking_uri)
    exp = client.get_experiment_by_name(a.experiment)
    assert exp is not None, f"no experiment {a.experiment!r}"
    for run in client.search_runs([exp.experiment_id]):
        tags = run.data.tags
        if tags.get("radtrack.role") != "row":
            continue
        start = run.info.end_time / 1000 - run.data.metrics["summary/duration_s"]
        with tempfile.TemporaryDirectory() as tmp:
            smi = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/smi.parquet", tmp))
        energy = smi[["time", "smi/gpu0/energy_j"]].dropna().sort_values("time")
        power = smi[["time", "smi/gpu0/power_sample_w"]].dropna() if "smi/gpu0/power_sample_w" in smi else None
        print(f"{tags.get('radtrack.workload')}{tags.get('radtrack.row', '')} {run.info.run_id[:8]}: "
              f"energy from {energy['time'].iloc[0] - start:+.3f} s (first values "
              f"{[round(x, 1) for x in energy['smi/gpu0/energy_j'].iloc[:3]]}), power samples from "
              f"{(power['time'].min() - start) if power is not None and len(power) else float('nan'):+.3f} s")
        for k, v in sorted(tags.items()):
            if k.startswith("radtrack.listener.") and ("backfill" in k or k.count(".") == 2 or "sampler" in k):
                print(f"    {k} = {v}")


if __name__ == "__main__":
    main()
