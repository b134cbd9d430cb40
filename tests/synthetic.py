"""Synthetic runs stored exactly the way the radtrack launcher stores them.

The frontend's tests, its benchmark and the documentation screenshots need a tracking
store with parent/child runs, radtrack tags and params, MLflow metrics written with
``log_batch`` and full-resolution ``telemetry/<listener>.parquet`` artifacts
(docs/architecture.md), without a GPU. The values are deterministic shapes (a
training-like power and utilisation profile plus seeded noise), never presented as
measurements.
"""

from __future__ import annotations

import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Metric, Param

from radtrack.store.sink import summarize
from radtrack.vocab import schema
from radtrack.vocab.schema import stored_key

#: 20 listener metrics across four listeners, as radtrack names them
DEFAULT_METRICS: tuple[str, ...] = (
    "smi/gpu0/power_w", "smi/gpu0/gpu_util_pct", "smi/gpu0/mem_used_mib", "smi/gpu0/temp_c",
    "smi/gpu0/sm_clock_mhz", "smi/gpu0/mem_clock_mhz", "smi/gpu0/mem_util_pct",
    "smi/gpu0/proc_sm_util_pct",
    "dcgm/gpu0/sm_active_pct", "dcgm/gpu0/sm_occupancy_pct", "dcgm/gpu0/tensor_active_pct",
    "dcgm/gpu0/dram_active_pct", "dcgm/gpu0/pcie_tx_bytes_per_s", "dcgm/gpu0/pcie_rx_bytes_per_s",
    "top/cpu_pct", "top/proc/rss_mib", "top/proc/threads_count", "top/mem_used_mib",
    "iostat/nvme0n1/read_bytes_per_s", "iostat/nvme0n1/write_bytes_per_s",
)

_BATCH = 1000  # MLflow's log_batch limit per call
_TERMINAL = ("FINISHED", "FAILED", "KILLED")


@dataclass
class SeededRun:
    run_id: str
    run_name: str
    experiment: str
    workload: int
    letter: str
    status: str
    start: float  # unix seconds
    metrics: list[str] = field(default_factory=list)


_template: Path | None = None


def new_store(directory: Path) -> str:
    """A fresh, empty SQLite tracking store in ``directory``; returns its URI.

    Creating MLflow's schema takes seconds, so it is done once per process and later
    stores start as copies of that empty database.
    """
    global _template
    if _template is None or not _template.is_file():
        path = Path(tempfile.mkdtemp(prefix="radtrack-template-")) / "mlflow.db"
        MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
        _template = path
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "mlflow.db"
    shutil.copyfile(_template, target)
    return f"sqlite:///{target}"


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("|".join(map(str, parts)).encode()))


def synthetic_values(key: str, n: int, seed: str) -> np.ndarray:
    """A plausible trace for metric ``key``: warm-up ramp, steady phase, noise, rare spikes."""
    rng = _rng(key, seed)
    t = np.linspace(0.0, 1.0, n)
    ramp = np.clip(t * 12, 0, 1)
    level = {"power_w": 550.0, "temp_c": 65.0, "mem_used_mib": 42_000.0,
             "sm_clock_mhz": 1980.0, "mem_clock_mhz": 2619.0, "rss_mib": 3_500.0,
             "threads_count": 24.0, "bytes_per_s": 9e8}
    top = next((v for suffix, v in level.items() if key.endswith(suffix)), 85.0)
    top *= 0.8 + 0.4 * rng.random()
    values = top * (0.15 + 0.85 * ramp) * (1 + 0.05 * np.sin(t * 40 * np.pi))
    values += rng.normal(0.0, 0.03 * top, n)
    spikes = rng.choice(n, size=max(n // 2000, 1), replace=False)
    values[spikes] *= 1.3
    if key.endswith("_pct"):
        values = np.clip(values, 0, 100)
    return np.maximum(values, 0.0)


def _listener_of(key: str) -> str:
    return key.split("/", 1)[0]


def _log_batches(client: MlflowClient, run_id: str, metrics: list[Metric]) -> None:
    for i in range(0, len(metrics), _BATCH):
        client.log_batch(run_id, metrics=metrics[i:i + _BATCH], synchronous=True)


def _listener_frames(times: np.ndarray, columns: dict[str, np.ndarray]) -> dict[str, pd.DataFrame]:
    """The wide trace of each listener, as the sink writes it: time, step, one column per key."""
    by_listener: dict[str, dict[str, np.ndarray]] = {}
    for key, values in columns.items():
        by_listener.setdefault(_listener_of(key), {})[key] = values
    return {listener: pd.DataFrame({"time": times, "step": np.arange(len(times), dtype=np.int64),
                                    **cols})
            for listener, cols in by_listener.items()}


def _write_telemetry(client: MlflowClient, run_id: str, times: np.ndarray,
                     columns: dict[str, np.ndarray]) -> None:
    with tempfile.TemporaryDirectory(prefix="radtrack-seed-") as tmp:
        for listener, frame in _listener_frames(times, columns).items():
            path = Path(tmp) / f"{listener}{schema.TRACE_SUFFIX}"
            frame.to_parquet(path, index=False)
            client.log_artifact(run_id, str(path), schema.TELEMETRY_DIR)


def seed_workload(tracking_uri: str, experiment: str, workload: int, letters: list[str],
                  *, metrics: tuple[str, ...] | list[str] = DEFAULT_METRICS, points: int = 600,
                  hz: float = 1.0, start: float = 1_700_000_000.0, status: str = "FINISHED",
                  history: bool = True, telemetry: bool = True, epochs: int = 5,
                  collocation: str = "-", artifact_root: Path | None = None,
                  params: dict[str, str] | None = None,
                  legacy_keys: bool = False) -> list[SeededRun]:
    """Create one workload (a parent run and one child per letter) as radtrack would.

    ``history`` logs every sample to MLflow with ``log_batch`` (as the launcher's sink
    does); without it only the last sample of each key is logged, which keeps seeding a
    million-point benchmark store fast while the Parquet trace stays complete.
    ``epochs`` > 0 adds a per-epoch ``loss`` and ``throughput_samples_per_s`` history,
    the script's own metrics, which exist only in MLflow. Listener series are stored under
    ``system/`` as the launcher stores them, or with ``legacy_keys`` bare, as radtrack
    stored them before (docs/architecture.md).
    """
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        exp_id = found.experiment_id
    else:
        location = None
        if artifact_root is not None:
            location = (artifact_root / experiment.replace(" ", "_")).resolve().as_uri()
        exp_id = client.create_experiment(experiment, artifact_location=location)
    base = f"{experiment}-{workload}"
    start_ms = int(start * 1000)
    end_ms = start_ms + int(points / hz * 1000)
    parent = client.create_run(exp_id, start_time=start_ms, run_name=base, tags={
        schema.ROLE: schema.ROLE_WORKLOAD, schema.WORKLOAD: str(workload),
        schema.EXPERIMENT: experiment, schema.START_SKEW_MS: "0.4"})
    names = [f"{base} {letter}" for letter in letters]
    seeded: list[SeededRun] = []
    for index, letter in enumerate(letters):
        name = names[index]
        # Co-located rows start within a barrier skew of each other.
        run_start = start + index * 0.0004
        run = client.create_run(exp_id, start_time=int(run_start * 1000), run_name=name, tags={
            "mlflow.parentRunId": parent.info.run_id, schema.ROLE: schema.ROLE_ROW,
            schema.EXPERIMENT: experiment, schema.WORKLOAD: str(workload),
            schema.LETTER: letter, schema.DEVICES: "0",
            schema.COLLOCATION: collocation,
            schema.COLOCATED_WITH: ",".join(n for n in names if n != name),
            schema.HOSTNAME: "synthetic", schema.listener_tag("smi"): "ok"})
        run_id = run.info.run_id
        run_params = {"script": "workloads/sgemm.py", "devices": "0", "collocation": collocation,
                      "listeners": "smi,dcgm,top,iostat", "interval": f"{1 / hz:g}",
                      "batch-size": str(64 * (index + 1)), **(params or {})}
        client.log_batch(run_id, params=[Param(k, v) for k, v in run_params.items()])
        times = run_start + np.arange(points, dtype=np.float64) / hz
        columns = {key: synthetic_values(key, points, f"{base}{letter}") for key in metrics}
        logged: list[Metric] = []
        for key, values in columns.items():
            idx = range(points) if history else [points - 1]
            as_stored = key if legacy_keys else stored_key(key)
            logged.extend(Metric(as_stored, float(values[i]), int(times[i] * 1000), i) for i in idx)
        if status in _TERMINAL:
            # The launcher's own summaries (radtrack.store.sink.summarize), one trace per listener.
            for frame in _listener_frames(times, columns).values():
                logged.extend(Metric(k, v, end_ms, 0) for k, v in summarize(frame).items())
            logged.append(Metric(schema.DURATION_KEY, points / hz, end_ms, 0))
        rng = _rng("epochs", base, letter)
        for epoch in range(epochs):
            at = int((run_start + (epoch + 1) * points / hz / max(epochs, 1)) * 1000)
            logged.append(Metric("loss", float(2.0 * 0.7 ** epoch + 0.05 * rng.random()), at, epoch))
            logged.append(Metric("throughput_samples_per_s", float(900 + 50 * rng.random()), at, epoch))
        _log_batches(client, run_id, logged)
        if telemetry and status in _TERMINAL:
            _write_telemetry(client, run_id, times, columns)
        if status in _TERMINAL:
            client.set_terminated(run_id, status, end_time=end_ms)
        seeded.append(SeededRun(run_id, name, experiment, workload, letter, status, run_start,
                                list(metrics)))
    if all(s.status in _TERMINAL for s in seeded):
        client.set_terminated(parent.info.run_id, "FINISHED", end_time=end_ms)
    return seeded


def append_samples(tracking_uri: str, run: SeededRun, first: int, count: int, hz: float = 1.0,
                   metrics: list[str] | None = None, legacy_keys: bool = False) -> None:
    """Log ``count`` more samples to a RUNNING run, as the sink does while a run is live."""
    client = MlflowClient(tracking_uri=tracking_uri)
    total = first + count
    logged = []
    for key in metrics or run.metrics:
        values = synthetic_values(key, total, f"{run.run_name}{run.letter}-live")
        name = key if legacy_keys else stored_key(key)
        logged.extend(Metric(name, float(values[i]), int((run.start + i / hz) * 1000), i)
                      for i in range(first, total))
    _log_batches(client, run.run_id, logged)


def seed_script_run(tracking_uri: str, row: SeededRun, name: str, *, experiment: str | None = None,
                    offset_s: float = 10.0, points: int = 200, hz: float = 1.0,
                    metrics: list[str] | None = None, epochs: int = 5,
                    parent_run_id: str | None = None) -> SeededRun:
    """A run the row's script made itself, as radtrack binds it after the row
    (docs/mlflow-code.md): in the row's experiment or ``experiment``, with the script's own
    ``loss`` history, the listener series and trace slice of its span (``offset_s`` after
    the row's start), ``radtrack.role=script`` and ``radtrack.row_run``; the row run's
    ``radtrack.script_runs`` gets its id."""
    client = MlflowClient(tracking_uri=tracking_uri)
    target = experiment or row.experiment
    found = client.get_experiment_by_name(target)
    exp_id = found.experiment_id if found is not None else client.create_experiment(target)
    start = row.start + offset_s
    tags = {schema.ROLE: schema.ROLE_SCRIPT, schema.ROW_RUN: row.run_id, schema.DEVICES: "0",
            schema.HOSTNAME: "synthetic"}
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(exp_id, start_time=int(start * 1000), run_name=name, tags=tags)
    run_id = run.info.run_id
    keys = list(metrics if metrics is not None else row.metrics)
    times = start + np.arange(points, dtype=np.float64) / hz
    columns = {key: synthetic_values(key, points, f"{row.run_name}{name}") for key in keys}
    logged = [Metric(stored_key(k), float(v[i]), int(times[i] * 1000), i)
              for k, v in columns.items() for i in range(points)]
    rng = _rng("script", row.run_id, name)
    for epoch in range(epochs):
        at = int((start + (epoch + 1) * points / hz / max(epochs, 1)) * 1000)
        logged.append(Metric("loss", float(1.5 * 0.6 ** epoch + 0.05 * rng.random()), at, epoch))
    end_ms = int((start + points / hz) * 1000)
    for frame in _listener_frames(times, columns).values():
        logged.extend(Metric(k, v, end_ms, 0) for k, v in summarize(frame).items())
    _log_batches(client, run_id, logged)
    if columns:
        _write_telemetry(client, run_id, times, columns)
    client.set_terminated(run_id, "FINISHED", end_time=end_ms)
    listed = client.get_run(row.run_id).data.tags.get(schema.SCRIPT_RUNS, "")
    client.set_tag(row.run_id, schema.SCRIPT_RUNS, ",".join([*filter(None, listed.split(",")), run_id]))
    return SeededRun(run_id, name, target, row.workload, row.letter, "FINISHED", start, keys)


def parent_of(tracking_uri: str, run: SeededRun) -> str:
    """The workload's parent run id of a seeded row."""
    return MlflowClient(tracking_uri=tracking_uri).get_run(run.run_id).data.tags["mlflow.parentRunId"]


def tag_launch(tracking_uri: str, runs: list[SeededRun], user: str, launch_id: str) -> None:
    """Who launched a seeded workload and which launch (issue 28): ``mlflow.user`` and
    ``radtrack.launch_id`` on its rows and its parent, as the launcher tags them."""
    client = MlflowClient(tracking_uri=tracking_uri)
    for run_id in dict.fromkeys([parent_of(tracking_uri, runs[0]), *(r.run_id for r in runs)]):
        client.set_tag(run_id, schema.MLFLOW_USER, user)
        client.set_tag(run_id, schema.LAUNCH_ID, launch_id)


def seed_attribution(tracking_uri: str, runs: list[SeededRun], watts: list[float],
                     *, points: int, hz: float = 1.0, gpu: str = "gpu0", other_w: float = 20.0,
                     idle_w: float = 0.0) -> None:
    """Co-location accounting as radtrack/postrun/accounting.py leaves it for a co-located
    workload on one GPU: each run's ``attribution/<gpu>/attributed_power_w`` series (a
    constant ``watts[i]``) and ``summary/attribution/<gpu>/energy_j``, its attribution tag,
    and the parent's ``attribution/power.parquet`` with ``other`` and ``idle``."""
    client = MlflowClient(tracking_uri=tracking_uri)
    start = runs[0].start
    times = start + np.arange(points, dtype=np.float64) / hz
    key = stored_key(schema.attribution_key(gpu, "attributed_power_w"))
    parts = []
    for run, power in zip(runs, watts, strict=True):
        logged = [Metric(key, float(power), int(t * 1000), i) for i, t in enumerate(times)]
        logged.append(Metric(schema.attribution_summary_key(gpu, "energy_j"),
                             float(power * points / hz), int(times[-1] * 1000), 0))
        _log_batches(client, run.run_id, logged)
        client.set_tag(run.run_id, schema.attribution_tag(gpu), "process-sm-util")
        parts.append((run.run_name, run.run_id, power))
    parts += [("other", "", other_w), ("idle", "", idle_w)]
    frame = pd.concat([pd.DataFrame({
        "time": times, "end": times + 1 / hz, "gpu": gpu, "gpu_uuid": "GPU-synthetic",
        "party": party, "run_id": run_id, "power_w": power, "energy_j": power / hz,
        "sm_share_pct": 0.0}) for party, run_id, power in parts])
    with tempfile.TemporaryDirectory(prefix="radtrack-seed-") as tmp:
        path = Path(tmp) / Path(schema.POWER_ARTIFACT).name
        frame.to_parquet(path, index=False)
        client.log_artifact(parent_of(tracking_uri, runs[0]), str(path),
                            schema.POWER_ARTIFACT.rsplit("/", 1)[0])
