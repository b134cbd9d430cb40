"""Seeds a tracking store the way the radtrack launcher does, for the analysis tests.

Parent run per workload, nested child run per row, the tags and params of
docs/architecture.md, listener samples through log_batch with their own timestamps,
and full-resolution ``telemetry/<listener>.parquet`` artifacts in the wide format.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from radtrack.store.sink import summarize
from radtrack.vocab.schema import stored_key

T0 = 1_750_000_000.0  # a fixed wall-clock origin (unix s) keeps expected values exact
GPU = "NVIDIA H100 80GB HBM3"


@dataclass
class Row:
    """One row of a workload and the signals its listeners saw."""

    duration_s: float
    power_w: float = 200.0
    util_pct: float = 90.0
    throughput: float | None = 100.0  # throughput_samples_per_s logged by the script
    params: dict[str, str] = field(default_factory=lambda: {"batch-size": "64"})
    script: str = "train.py"
    collocation: str = "-"
    devices: str = "0"
    gpu: str = GPU
    parquet: bool = True  # write telemetry/smi.parquet
    history: bool = True  # also log the smi samples to MLflow (the sink does both)
    legacy_keys: bool = False  # history under smi/... as radtrack stored it before system/...
    energy_counter: bool = True
    interval_s: float = 0.5
    extra: dict[str, list[tuple[float, int, float]]] = field(default_factory=dict)  # key -> (s, step, v)
    status: str = "FINISHED"
    summaries: bool = False  # log the sink's summary/<key>/mean|min|max and energy metrics
    stored_energy: bool = True  # with summaries: also the counter's stored energy
    gpus: int = 1  # smi readings of gpu0 .. gpu<n-1> (gpu<i> draws power_w + 10 i)
    attributed_j: float | None = None  # the launcher's attributed energy of gpu0, and its method
    attribution: str = "process-sm-util"


def smi_frame(row: Row, start: float) -> pd.DataFrame:
    t = start + np.arange(0.0, row.duration_s + 1e-9, row.interval_s)
    frame = pd.DataFrame({
        "time": t,
        "step": np.arange(len(t), dtype="int64"),
        "smi/gpu0/power_w": np.full(len(t), row.power_w),
        "smi/gpu0/gpu_util_pct": np.full(len(t), row.util_pct),
        "smi/gpu0/mem_used_mib": np.linspace(1000.0, 2000.0, len(t)),
        "smi/gpu0/temp_c": np.full(len(t), 50.0),
    })
    for gpu in range(1, row.gpus):
        frame[f"smi/gpu{gpu}/power_w"] = np.full(len(t), row.power_w + 10.0 * gpu)
        frame[f"smi/gpu{gpu}/gpu_util_pct"] = np.full(len(t), row.util_pct)
    if row.energy_counter:
        # A counter with an arbitrary origin: only its increase is energy.
        for gpu in range(row.gpus):
            frame[f"smi/gpu{gpu}/energy_j"] = 5e6 + (row.power_w + 10.0 * gpu) * (t - start)
    return frame


def seed_workload(client: MlflowClient, experiment: str, workload: int, rows: list[Row],
                  start: float = T0) -> list[str]:
    """Create the parent and child runs of one workload; returns the child run ids."""
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    parent = client.create_run(exp_id, start_time=int(start * 1000),
                               run_name=f"{experiment}-{workload}",
                               tags={"radtrack.role": "workload",
                                     "radtrack.workload": str(workload),
                                     "radtrack.experiment": experiment})
    letters = [chr(ord("A") + i) for i in range(len(rows))]
    names = [f"{experiment}-{workload} {ltr}" for ltr in letters]
    ids = []
    for row, letter, name in zip(rows, letters, names, strict=True):
        tags = {
            "radtrack.role": "row", "radtrack.experiment": experiment,
            "radtrack.workload": str(workload), "radtrack.letter": letter,
            "radtrack.devices": row.devices, "radtrack.collocation": row.collocation,
            "radtrack.colocated_with": ",".join(n for n in names if n != name),
            "radtrack.gpu.names": row.gpu, "radtrack.listener.smi": "ok",
            "mlflow.parentRunId": parent.info.run_id,
        }
        run = client.create_run(exp_id, start_time=int(start * 1000), tags=tags, run_name=name)
        run_id = run.info.run_id
        params = {**row.params, "script": row.script, "devices": row.devices,
                  "collocation": row.collocation, "listeners": "smi", "interval": str(row.interval_s)}
        smi = smi_frame(row, start)
        metrics = []
        if row.history:
            for key in smi.columns.drop(["time", "step"]):
                stored = key if row.legacy_keys else stored_key(key)
                metrics += [Metric(stored, float(v), int(round(t * 1000)), int(s))
                            for t, s, v in zip(smi["time"], smi["step"], smi[key], strict=True)]
        if row.throughput is not None:
            for i in range(int(row.duration_s)):
                metrics.append(Metric("throughput_samples_per_s", row.throughput,
                                      int((start + i + 1) * 1000), i))
        for key, points in row.extra.items():
            metrics += [Metric(key, v, int(round((start + s) * 1000)), step) for s, step, v in points]
        end_ms = int((start + row.duration_s) * 1000)
        metrics.append(Metric("summary/duration_s", row.duration_s, end_ms, 0))
        if row.summaries:
            metrics += [Metric(k, v, end_ms, 0) for k, v in summarize(smi).items()
                        if row.stored_energy or not k.endswith("energy_j")]
        if row.attributed_j is not None:
            metrics.append(Metric("summary/attribution/gpu0/energy_j", row.attributed_j, end_ms, 0))
            client.set_tag(run_id, "radtrack.attribution.gpu0", row.attribution)
        for i in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[i:i + 1000],
                             params=[Param(k, v) for k, v in params.items()] if i == 0 else [],
                             tags=[RunTag("radtrack.exit_code", "0")] if i == 0 else [])
        if row.parquet:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "smi.parquet"
                smi.to_parquet(path, index=False)
                client.log_artifact(run_id, str(path), "telemetry")
        client.set_terminated(run_id, row.status, end_time=int((start + row.duration_s) * 1000))
        ids.append(run_id)
    end = start + max(r.duration_s for r in rows)
    client.set_terminated(parent.info.run_id, "FINISHED", end_time=int(end * 1000))
    return ids
