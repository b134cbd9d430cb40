"""Summary statistics on hand-built frames with known answers, and on a seeded store."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from support import made_store
from test_analysis_seed import Row, seed_workload

from radtrack.analysis import data
from radtrack.analysis.run_summaries import summarize_runs
from radtrack.compute.summary import (
    coefficient_of_variation,
    counter_energy,
    integrate_energy,
    run_energy,
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


def test_without_a_counter_the_average_power_is_integrated_before_the_instant_one():
    t = np.arange(0.0, 10.01, 0.1)
    instant = long("r", "smi/gpu0/power_w", t, np.full(len(t), 104.0))  # aliased, biased
    average = long("r", "smi/gpu0/power_avg_w", t[::10], np.full(11, 100.0))
    assert run_energy(pd.concat([instant, average])) == pytest.approx(1000.0)
    assert run_energy(instant) == pytest.approx(1040.0)
    counter = long("r", "smi/gpu0/energy_j", t[::50], [0.0, 500.0, 999.0])
    assert run_energy(pd.concat([instant, average, counter])) == pytest.approx(999.0)


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
    client = MlflowClient(made_store(store))
    ids = seed_workload(client, "sum", 1, [Row(duration_s=10, power_w=150.0),
                                           Row(duration_s=8, power_w=300.0, parquet=False,
                                               energy_counter=False, throughput=None)])
    summary = summarize_runs(ids).set_index("run_id")
    a, b = summary.loc[ids[0]], summary.loc[ids[1]]
    assert a["run_name"] == "sum-1 A" and a["workload"] == 1
    assert a["gpu_energy_j"] == pytest.approx(1500.0)  # counter path, from Parquet
    assert b["gpu_energy_j"] == pytest.approx(2400.0)  # integrated power, from history
    # co-located and recorded without attribution: no energy of its own rather than the
    # whole GPU's counted once per run
    assert np.isnan(a["energy_j"]) and a["attribution"] == "unattributed"
    assert np.isnan(a["energy_per_sample_j"])
    assert a["power_w_mean"] == pytest.approx(150.0)
    assert a["mem_used_mib_mean"] == pytest.approx(1500.0)
    assert a["temp_c_max"] == pytest.approx(50.0)
    assert np.isnan(b["throughput_samples_per_s_mean"])
    by_frame = summarize_runs(data.load_runs("sum"))
    assert sorted(by_frame["run_id"]) == sorted(ids)


def test_work_units_of_throughput_keys():
    from radtrack.compute.summary import work_unit

    assert work_unit("throughput_samples_per_s") == "sample"
    assert work_unit("throughput_tflops") == "tflop"
    assert work_unit("throughput_tokens_per_s") == "token"
    assert work_unit("throughput_ratio") is None
    t = np.arange(0.0, 10.01, 1.0)
    series = pd.concat([long("r", "smi/gpu0/power_w", t, np.full(11, 100.0)),
                        long("r", "throughput_tflops", [1, 2], [40.0, 60.0])])
    row = summarize_series(series).iloc[0]
    assert row["energy_per_tflop_j"] == pytest.approx(1000.0 / (50.0 * 10))


class SpyLoader:
    """load_series, recording which keys each summary asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def __call__(self, run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        self.calls.append((list(run_ids), list(keys)))
        return data.load_series(run_ids, metrics=keys)

    def keys(self, run_id: str) -> set[str]:
        return {k for ids, keys in self.calls if run_id in ids for k in keys}


def _all_series(ids: list[str]) -> pd.DataFrame:
    keys = [k for k in data.list_metrics(ids) if not k.startswith("summary/")]
    return data.load_series(ids, metrics=keys)


def test_stored_summaries_agree_with_the_series_on_the_synthetic_store(tmp_path, monkeypatch):
    from synthetic import new_store
    from synthetic import seed_workload as seed_synthetic

    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    uri = new_store(tmp_path / "store")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    # Noisy traces with spikes, sampled at 10 Hz, the launcher's summaries stored with them.
    seeded = seed_synthetic(uri, "fast", 1, ["A", "B"], points=3000, hz=10.0, history=False,
                            artifact_root=tmp_path / "artifacts")
    ids = [s.run_id for s in seeded]
    runs = data.load_runs(run_ids=ids)
    assert runs["metric.summary/smi/gpu0/power_w/mean"].notna().all()
    spy = SpyLoader()
    fast = summarize_runs(runs, load=spy).set_index("run_id")
    slow = summarize_runs(runs, series=_all_series(ids)).set_index("run_id")
    assert sorted(fast.columns) == sorted(slow.columns)
    assert "power_w_p95" in fast.columns and "energy_per_sample_j" in fast.columns
    numeric = [c for c in slow.columns if pd.api.types.is_numeric_dtype(slow[c])]
    pd.testing.assert_frame_equal(fast.loc[ids, numeric], slow.loc[ids, numeric],
                                  check_exact=False, rtol=1e-9)
    # Mean and max came from the stored values: only what they cannot answer was read.
    quick = SpyLoader()
    no_p95 = summarize_runs(runs, load=quick, quantiles=False).set_index("run_id")
    assert not any(c.endswith("_p95") for c in no_p95.columns)
    for run_id in ids:
        # power: no energy counter here, so energy is integrated power; throughput: script history
        assert quick.keys(run_id) == {"smi/gpu0/power_w", "throughput_samples_per_s"}
        assert "smi/gpu0/temp_c" in spy.keys(run_id)  # the p95 needs every quantity's samples
    # samples: without the p95 the series are not read, and these runs store no counts
    # (summary/<key>/n) nor monitoring samples: left blank rather than read for a count
    same = [c for c in numeric if not c.endswith("_p95") and c != "samples"]
    pd.testing.assert_frame_equal(no_p95.loc[ids, same], slow.loc[ids, same],
                                  check_exact=False, rtol=1e-9)
    assert no_p95["samples"].isna().all() and (slow["samples"] == 3000).all()


def test_stored_values_are_used_and_runs_without_them_are_computed(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    ids = seed_workload(client, "mixed", 1, [
        Row(duration_s=10, power_w=150.0, summaries=True),
        Row(duration_s=8, power_w=300.0, summaries=False),
        Row(duration_s=6, power_w=100.0, summaries=True, gpus=2),
    ])
    with_summary, without, two_gpus = ids
    # A stored mean that differs from the samples shows which one the summary used.
    client.log_metric(with_summary, "summary/smi/gpu0/temp_c/mean", 47.0)
    spy = SpyLoader()
    table = summarize_runs(ids, load=spy, quantiles=False).set_index("run_id")
    a, b, c = table.loc[with_summary], table.loc[without], table.loc[two_gpus]
    assert a["temp_c_mean"] == pytest.approx(47.0) and a["temp_c_max"] == pytest.approx(50.0)
    assert a["gpu_energy_j"] == pytest.approx(1500.0)  # the stored counter delta
    assert spy.keys(with_summary) == {"throughput_samples_per_s"}  # no telemetry read at all
    # no summaries: everything from the samples, as before
    assert b["temp_c_mean"] == pytest.approx(50.0) and b["gpu_energy_j"] == pytest.approx(2400.0)
    assert b["power_w_mean"] == pytest.approx(300.0) and b["mem_used_mib_mean"] == pytest.approx(1500.0)
    assert "smi/gpu0/temp_c" in spy.keys(without)
    # two GPUs: energy adds both stored counters; the combined power needs the series
    assert c["gpu_energy_j"] == pytest.approx(6 * 100.0 + 6 * 110.0)
    assert c["power_w_mean"] == pytest.approx(210.0) and c["power_w_max"] == pytest.approx(210.0)
    assert c["gpu_util_pct_mean"] == pytest.approx(90.0)
    assert {"smi/gpu0/power_w", "smi/gpu1/power_w"} <= spy.keys(two_gpus)
    assert "smi/gpu0/temp_c" not in spy.keys(two_gpus)  # single device: stored
    # The series path agrees wherever the stored values were not tampered with.
    slow = summarize_runs(ids, series=_all_series(ids), quantiles=False).set_index("run_id")
    for run_id in (without, two_gpus):
        for column in slow.columns:
            # samples: a stored run's needs stored counts or its series (not all read here)
            if pd.api.types.is_numeric_dtype(slow[column]) and not (
                    column == "samples" and run_id == two_gpus):
                assert table.loc[run_id, column] == pytest.approx(slow.loc[run_id, column], nan_ok=True), column


def test_running_run_and_missing_stored_energy_fall_back_to_the_series(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    ids = seed_workload(client, "edge", 1, [
        Row(duration_s=10, power_w=150.0, summaries=True, status="RUNNING"),
        Row(duration_s=10, power_w=150.0, summaries=True, stored_energy=False),
    ])
    running, zero = ids
    # No stored energy (the sink stores none for a counter with under two readings): the
    # series decides, while the other stored summaries are still used.
    client.log_metric(zero, "summary/smi/gpu0/power_w/mean", 999.0)
    spy = SpyLoader()
    table = summarize_runs(ids, load=spy, quantiles=False).set_index("run_id")
    assert "smi/gpu0/temp_c" in spy.keys(running)  # RUNNING: summaries are not final
    assert table.loc[running, "power_w_mean"] == pytest.approx(150.0)
    assert table.loc[zero, "power_w_mean"] == pytest.approx(999.0)  # stored value used
    assert "smi/gpu0/energy_j" in spy.keys(zero)
    assert table.loc[zero, "gpu_energy_j"] == pytest.approx(1500.0)  # the counter series


def test_colocated_runs_recorded_without_accounting_are_accounted_from_traces(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    ids = seed_workload(client, "old", 1, [Row(duration_s=10, power_w=300.0), Row(duration_s=10, power_w=300.0)])
    unknown = summarize_runs(ids).set_index("run_id")
    assert (unknown["attribution"] == "unattributed").all()  # no GPU UUID tag: nothing to go on
    for run_id in ids:  # what the smi probe records on every run
        client.set_tag(run_id, "radtrack.listener.smi.gpu0.uuid", "GPU-558ac94e")
    table = summarize_runs(ids).set_index("run_id")
    for run_id in ids:
        row = table.loc[run_id]
        # no per-process readings in these traces: the GPU's 3000 J split by holding time
        assert row["attribution"] == "held-time (from traces)"
        assert row["energy_j"] == pytest.approx(1500.0, rel=0.02)
        assert row["gpu_energy_j"] == pytest.approx(3000.0)
    assert table["energy_j"].sum() == pytest.approx(3000.0, rel=0.01)
