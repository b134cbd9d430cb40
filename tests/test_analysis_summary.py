"""Summary statistics on hand-built frames with known answers, and on a seeded store."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from test_analysis_seed import Row, seed_workload

from radtrack.analysis import data
from radtrack.analysis.summary import (
    coefficient_of_variation,
    counter_energy,
    integrate_energy,
    run_energy,
    summarize_runs,
    summarize_series,
    time_weighted_mean,
    time_weighted_quantile,
    windowed_mean,
)


def long(run_id: str, metric: str, seconds, values) -> pd.DataFrame:
    return pd.DataFrame({"run_id": run_id, "metric": metric,
                         "seconds": np.asarray(seconds, dtype=float),
                         "value": np.asarray(values, dtype=float)})


def test_constant_100_w_for_10_s_is_1000_j_both_ways():
    t = np.arange(0.0, 10.01, 0.1)
    assert integrate_energy(t, np.full(len(t), 100.0)) == pytest.approx(1000.0)
    assert counter_energy(123456.0 + 100.0 * t) == pytest.approx(1000.0)
    counter = long("r", "smi/gpu0/energy_j", t, 7.0 + 100.0 * t)
    power = long("r", "smi/gpu0/power_w", t, np.full(len(t), 100.0))
    assert run_energy(power) == pytest.approx(1000.0)
    # the counter wins over power: a 50 W power reading must not be used when it exists
    assert run_energy(pd.concat([counter, power.assign(value=50.0)])) == pytest.approx(1000.0)


def test_energy_sums_gpus_and_does_not_double_count_listeners():
    t = np.arange(0.0, 10.01, 1.0)
    frame = pd.concat([long("r", "smi/gpu0/power_w", t, np.full(11, 100.0)),
                       long("r", "smi/gpu1/power_w", t, np.full(11, 50.0)),
                       long("r", "dcgm/gpu0/power_w", t, np.full(11, 999.0))])
    assert run_energy(frame) == pytest.approx(1500.0)
    assert np.isnan(run_energy(long("r", "top/cpu_pct", t, t)))
    assert np.isnan(integrate_energy([1.0], [100.0]))


def test_time_weighted_mean_with_uneven_sampling():
    # 0 W for 9 s (two samples), then 10 samples in the last second at 100 W: a plain
    # average says ~83 W; the signal spent 9 s near 0 W.
    t = np.array([0.0, 9.0, *np.linspace(9.1, 10.0, 10)])
    v = np.array([0.0, 0.0, *np.full(10, 100.0)])
    expected = (0.5 * 0.1 * 100.0 + 0.9 * 100.0) / 10.0  # ramp 9->9.1 s, then flat
    assert time_weighted_mean(t, v) == pytest.approx(expected)
    assert v.mean() == pytest.approx(83.33, abs=0.01)
    assert time_weighted_mean([5.0], [42.0]) == 42.0
    assert np.isnan(time_weighted_mean([], []))
    assert time_weighted_mean([0.0, 1.0, 2.0], [1.0, np.nan, 3.0]) == pytest.approx(2.0)


def test_time_weighted_quantile_weights_by_time():
    t = np.array([0.0, 9.0, 9.5, 10.0])
    v = np.array([10.0, 10.0, 500.0, 500.0])
    # 500 W covers only the last ~5 % of the time: the p50 is 10 W, the max 500 W
    assert time_weighted_quantile(t, v, 0.5) == 10.0
    assert time_weighted_quantile(t, v, 1.0) == 500.0


def test_coefficient_of_variation_of_known_values():
    assert coefficient_of_variation([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    assert coefficient_of_variation([5.0, 5.0]) == 0.0
    assert np.isnan(coefficient_of_variation([5.0]))


def test_windowed_mean_interpolates_window_edges():
    t = np.arange(0.0, 11.0, 1.0)
    series = pd.concat([long("a", "smi/gpu0/gpu_util_pct", t, t * 10),
                        long("b", "smi/gpu0/gpu_util_pct", t, np.full(11, 30.0))])
    got = windowed_mean(series, "smi/gpu0/gpu_util_pct", 2.5, 6.5)
    assert got["a"] == pytest.approx(45.0) and got["b"] == pytest.approx(30.0)
    first_3_min = windowed_mean(series, "smi/gpu0/gpu_util_pct", 0, 180)
    assert first_3_min["a"] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="window end 1 s must be after its start 2 s"):
        windowed_mean(series, "smi/gpu0/gpu_util_pct", 2, 1)


def test_summarize_series_power_util_throughput_energy_per_sample():
    t = np.arange(0.0, 10.01, 0.5)
    series = pd.concat([
        long("r", "smi/gpu0/power_w", t, np.full(len(t), 100.0)),
        long("r", "smi/gpu1/power_w", t, np.full(len(t), 100.0)),
        long("r", "smi/gpu0/gpu_util_pct", t, np.full(len(t), 80.0)),
        long("r", "smi/gpu1/gpu_util_pct", t, np.full(len(t), 40.0)),
        long("r", "top/proc/rss_mib", t, np.full(len(t), 512.0)),
        long("r", "throughput_samples_per_s", [1, 2, 3], [90.0, 100.0, 110.0]),
    ])
    row = summarize_series(series).set_index("run_id").loc["r"]
    assert row["duration_s"] == pytest.approx(10.0)
    assert row["energy_j"] == pytest.approx(2000.0)
    assert row["power_w_mean"] == pytest.approx(200.0)  # two GPUs add up
    assert row["power_w_max"] == pytest.approx(200.0)
    assert row["gpu_util_pct_mean"] == pytest.approx(60.0)  # utilisation averages
    assert row["rss_mib_p95"] == pytest.approx(512.0)
    assert row["throughput_samples_per_s_mean"] == pytest.approx(100.0)
    assert row["energy_per_sample_j"] == pytest.approx(2000.0 / 1000.0)
    overridden = summarize_series(series, durations={"r": 20.0}).iloc[0]
    assert overridden["energy_per_sample_j"] == pytest.approx(2000.0 / (100.0 * 20))


def test_summarize_runs_on_seeded_store(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(store)
    ids = seed_workload(client, "sum", 1, [Row(duration_s=10, power_w=150.0),
                                           Row(duration_s=8, power_w=300.0, parquet=False,
                                               energy_counter=False, throughput=None)])
    summary = summarize_runs(ids).set_index("run_id")
    a, b = summary.loc[ids[0]], summary.loc[ids[1]]
    assert a["run_name"] == "sum-1 A" and a["workload"] == 1
    assert a["energy_j"] == pytest.approx(1500.0)  # counter path, from Parquet
    assert b["energy_j"] == pytest.approx(2400.0)  # integrated power, from history
    assert a["power_w_mean"] == pytest.approx(150.0)
    assert a["mem_used_mib_mean"] == pytest.approx(1500.0)
    assert a["temp_c_max"] == pytest.approx(50.0)
    assert a["energy_per_sample_j"] == pytest.approx(1500.0 / (100.0 * 10))
    assert np.isnan(b["throughput_samples_per_s_mean"])
    by_frame = summarize_runs(data.load_runs("sum"))
    assert sorted(by_frame["run_id"]) == sorted(ids)


def test_work_units_of_throughput_keys():
    from radtrack.analysis.summary import work_unit

    assert work_unit("throughput_samples_per_s") == "sample"
    assert work_unit("throughput_tflops") == "tflop"
    assert work_unit("throughput_tokens_per_s") == "token"
    assert work_unit("throughput_ratio") is None
    t = np.arange(0.0, 10.01, 1.0)
    series = pd.concat([long("r", "smi/gpu0/power_w", t, np.full(11, 100.0)),
                        long("r", "throughput_tflops", [1, 2], [40.0, 60.0])])
    row = summarize_series(series).iloc[0]
    assert row["energy_per_tflop_j"] == pytest.approx(1000.0 / (50.0 * 10))
