"""host-gpu-eda end to end on CPU (two smoke-sized workloads of the study's sheet through the
real CLI, NVML doubles for the GPU readings), and the temperature baseline on a known answer."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from studies_support import cpu_sheet  # noqa: E402
from support import radtrack_cli, report_here  # noqa: E402

from radtrack.analysis.studies.host_gpu_eda import (  # noqa: E402
    cross_validated_rmse,
    fit_linear,
    fit_mean,
    temperature_baseline,
)


@pytest.fixture
def one_openmp_thread() -> Iterator[None]:
    """scikit-learn's gradient boosting (the baseline's third model) on one OpenMP thread in
    this process: its threads spin at every barrier, and on a small host loaded by other
    tests two of them took a minute where one takes seconds. The models' answers do not
    depend on it."""
    try:
        import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime the limit applies to)
        from threadpoolctl import threadpool_limits
    except ImportError:  # no scikit-learn: the baseline has no gradient boosting
        yield
        return
    with threadpool_limits(limits=1):
        yield



@pytest.mark.slow
@pytest.mark.timeout(900)  # a launch of two smoke-sized torch scripts on a small, shared CPU
def test_eda_sheet_and_report(store, tmp_path, monkeypatch, capsys, one_openmp_thread):
    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "scenario.json", [{
        "uuid": H100_UUID, "watts": 250.0, "mps_server_sm": None, "procs": []}])
    # the pooled baseline cross-validates over 1-s rows (10 at least: 5 folds of 2): the two
    # runs together must span 10 s and more. matmul_loop's smoke run gives about 3 rows;
    # cifar_cnn's 2000 samples x 8 epochs about 12 (3000 samples gave 6 rows once the
    # launcher stopped importing MLflow beside the scripts: torch's import got the cores)
    sheet = cpu_sheet("host-gpu-eda", tmp_path / "eda.csv", workloads={1, 4},
                      replace={"10000": "2000", "50": "8"}, interval=0.25)
    p = radtrack_cli(str(sheet), env=env, timeout=500)
    assert p.returncode == 0, p.stderr[-3000:]
    out = tmp_path / "eda-out.csv"
    p = report_here(monkeypatch, capsys, "host-gpu-eda", "--study", "host-gpu-eda",
                    "--format", "csv", "--out", str(out))
    assert p.returncode == 0, p.stderr
    workloads = pd.read_csv(out)
    corr = pd.read_csv(out.with_name("eda-out.correlations.csv"))
    baseline = pd.read_csv(out.with_name("eda-out.baseline.csv"))
    assert list(workloads["script"]) == ["matmul_loop", "cifar_cnn"]
    # the doubles' GPU: 250 W at 38 C; the host's own CPU readings are real and positive
    assert workloads["gpu_power_w"].tolist() == pytest.approx([250.0, 250.0])
    assert workloads["gpu_temp_c"].tolist() == pytest.approx([38.0, 38.0])
    assert (workloads["proc_cpu_pct"] > 0).all()
    assert set(corr["script"]) == {"matmul_loop", "cifar_cnn", "pooled"}
    assert {"top/cpu_pct", "top/proc/cpu_pct"} <= set(corr["cpu_metric"])
    # a constant GPU reading has no defined correlation: NaN, never a made-up number
    assert corr.loc[corr["gpu_metric"] == "smi/gpu0/temp_c", "r"].isna().all()
    assert set(baseline["scope"]) == {"matmul_loop", "cifar_cnn", "pooled"}
    assert (baseline["target"] == "smi/gpu0/temp_c").all()
    # a constant temperature is predicted exactly by every model
    assert baseline["rmse_c"].dropna().abs().max() == pytest.approx(0.0, abs=1e-6)
    assert baseline.loc[baseline["scope"] == "pooled", "rmse_c"].notna().all()


def _frame(runs: int = 2, rows: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for r in range(runs):
        a, b = rng.uniform(0, 100, rows), rng.uniform(100, 400, rows)
        parts.append(pd.DataFrame({
            "run_id": f"r{r}", "seconds": np.arange(rows, dtype=float),
            "smi/gpu0/power_w": b, "top/cpu_pct": a, "smi/gpu0/mem_temp_c": rng.normal(50, 1, rows),
            "smi/gpu0/energy_j": np.cumsum(b),
            "smi/gpu0/temp_c": 30.0 + 0.1 * b + 0.05 * a}))
    return pd.concat(parts, ignore_index=True)


def test_linear_baseline_recovers_an_exact_relation():
    frame = _frame()
    linear, n = cross_validated_rmse(frame, "smi/gpu0/temp_c", fit_linear)
    mean, _ = cross_validated_rmse(frame, "smi/gpu0/temp_c", fit_mean)
    assert n == 120
    # temp = 30 + 0.1 power + 0.05 cpu: the (lightly ridge-regularised) linear model finds it
    assert linear < 0.05 * mean and linear < 0.2
    assert mean > 5.0


def test_baseline_table_per_workload_and_pooled(one_openmp_thread):
    table, notes = temperature_baseline(_frame(runs=2), {"r0": "fft", "r1": "sepia"})
    assert set(table["scope"]) == {"fft", "sepia", "pooled"}
    # features: everything but the GPU's temperatures and the cumulative energy counter
    assert (table["features"] == 2).all()
    models = set(table["model"])
    assert {"training mean", "linear (numpy)"} <= models
    try:
        import sklearn  # noqa: F401
    except ImportError:
        assert notes and "scikit-learn is not installed" in notes[0]
    else:
        assert "gradient boosting (scikit-learn)" in models and not notes
    empty, notes = temperature_baseline(pd.DataFrame(columns=["run_id", "seconds"]), {})
    assert empty.empty and "no GPU temperature readings" in notes[0]
