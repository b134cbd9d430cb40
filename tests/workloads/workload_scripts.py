"""What the stressmark suite's tests share (tests/workloads/test_workloads.py, the scripts as
plain programs and their kernels; test_workloads_tracked.py, the scripts through radtrack):
the scripts, the metric each must log, how a plain run is started and read."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from support import REPO

WORKLOADS = REPO / "workloads"
EXAMPLES = REPO / "examples"

#: script -> the throughput metric every run of it must log
THROUGHPUT = {
    "sgemm": "throughput_tflops",
    "dgemm": "throughput_tflops",
    "matmul_loop": "throughput_iters_per_s",
    "resnet": "throughput_samples_per_s",
    "bert": "throughput_samples_per_s",
    "distilbert_qa": "throughput_samples_per_s",
    "dlrm": "throughput_samples_per_s",
    "cifar_cnn": "throughput_samples_per_s",
    "blackscholes": "throughput_options_per_s",
    "montecarlo_options": "throughput_options_per_s",
    "euclidean": "throughput_rows_per_s",
    "kmeans": "throughput_points_per_s",
    "fft": "throughput_gflops",
    "spectrogram": "throughput_audio_s_per_s",
    "sepia": "throughput_images_per_s",
    "ddp": "throughput_samples_per_s",
}
#: scripts whose step returns a training loss (or k-means inertia), logged as ``loss``
WITH_LOSS = {"resnet", "bert", "distilbert_qa", "dlrm", "cifar_cnn", "kmeans", "ddp"}


def plain_env() -> dict[str, str]:
    """The environment of a script started by hand: no radtrack run to attach to."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RADTRACK_") and k != "MLFLOW_RUN_ID"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


# generous: a smoke run takes seconds alone, over a minute on a 2-core CI host running two test files
def run_script(path: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(path), *args], env=plain_env(),
                          capture_output=True, text=True, timeout=timeout)


def printed(metric: str, stdout: str) -> list[float]:
    """Values of ``metric`` in the ``block N/M: key=value ...`` lines a script prints."""
    return [float(v) for v in re.findall(rf"\b{metric}=([-+0-9.e]+|nan|inf)", stdout)]


def write_cifar_batch(path: Path, images: int, *, bytes_keys: bool = True, **override: Any,
                      ) -> np.ndarray:
    """A file in the CIFAR-10 python format (as the official batches, bytes keys)."""
    rng = np.random.default_rng(len(path.name) + images)
    data = rng.integers(0, 256, size=(images, 3072), dtype=np.uint8)
    batch: dict[Any, Any] = {"data": data, "labels": [i % 10 for i in range(images)],
                             "batch_label": "training batch 1 of 5"}
    batch.update(override)
    if bytes_keys:
        batch = {k.encode(): v for k, v in batch.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(batch))
    return data
