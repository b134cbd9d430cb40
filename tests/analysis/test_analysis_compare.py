"""Interference, variability, time-to-target and correlation: known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from support import made_store
from test_analysis_seed import T0, Row, seed_workload

from radtrack.analysis import data
from radtrack.analysis.run_summaries import summarize_runs
from radtrack.compute.correlation import align, correlate
from radtrack.compute.interference import interference
from radtrack.compute.variability import time_to_target, variability


def long(run_id: str, metric: str, seconds, values, steps=None) -> pd.DataFrame:
    seconds = np.asarray(seconds, dtype=float)
    return pd.DataFrame({"run_id": run_id, "metric": metric, "seconds": seconds,
                         "step": np.arange(len(seconds)) if steps is None else steps,
                         "value": np.asarray(values, dtype=float)})


@pytest.fixture
def experiment(store, tmp_path, monkeypatch) -> dict[str, list[str]]:
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    solo = seed_workload(client, "coloc", 1, [Row(duration_s=10, power_w=200.0, throughput=100.0)])
    pair = seed_workload(client, "coloc", 2, [
        # the GPU's 300 W x 15 s = 4500 J, attributed 2:1 by the launcher
        Row(duration_s=15, power_w=300.0, throughput=60.0, collocation="mps", attributed_j=3000.0,
            attribution="mps-equal"),
        Row(duration_s=15, power_w=300.0, throughput=60.0, collocation="mps",
            params={"batch-size": "32"}, attributed_j=1500.0,
            attribution="mps-equal"),  # no solo run has batch-size 32
    ], start=T0 + 100)
    repeat = seed_workload(client, "coloc", 3, [Row(duration_s=12, power_w=200.0, throughput=80.0)],
                           start=T0 + 200)
    return {"solo": solo + repeat, "pair": pair}


def test_interference_against_solo_runs(experiment):
    runs = data.load_runs("coloc")
    table = interference(runs, summarize_runs(runs)).set_index("run_id")
    assert len(table) == 2
    a = table.loc[experiment["pair"][0]]
    assert sorted(a["solo_run_ids"].split(",")) == sorted(experiment["solo"])
    assert a["slowdown_basis"] == "throughput_samples_per_s"
    assert a["solo_throughput"] == pytest.approx(90.0)  # mean of the two solo repeats
    assert a["slowdown"] == pytest.approx(90.0 / 60.0)
    # the run's attributed energy, not the GPU's 4500 J nor an equal split of it
    assert a["energy_j"] == pytest.approx(3000.0) and a["attribution"] == "mps-equal"
    assert a["work_unit"] == "sample"
    assert a["energy_per_unit_j"] == pytest.approx(3000.0 / 900.0)
    solo_j_per_sample = np.mean([2000.0 / 1000.0, 2400.0 / 960.0])
    assert a["solo_energy_per_unit_j"] == pytest.approx(solo_j_per_sample)
    assert a["energy_per_unit_change_pct"] == pytest.approx(100 * (3000 / 900 / solo_j_per_sample - 1))
    b = table.loc[experiment["pair"][1]]
    assert np.isnan(b["slowdown"])
    assert b["note"] == "no solo run of train.py with params [batch-size=32] in experiment 'coloc'"


def test_interference_falls_back_to_duration(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    seed_workload(client, "dur", 1, [Row(duration_s=10, throughput=None)])
    pair = seed_workload(client, "dur", 2, [Row(duration_s=14, throughput=None, devices="0",
                                                attributed_j=2800.0, attribution="solo"),
                                            Row(duration_s=14, throughput=None, devices="1",
                                                attributed_j=2800.0, attribution="solo")],
                         start=T0 + 50)
    runs = data.load_runs("dur")
    row = interference(runs, summarize_runs(runs)).set_index("run_id").loc[pair[0]]
    assert row["slowdown_basis"] == "duration_s" and row["slowdown"] == pytest.approx(1.4)
    assert row["work_unit"] == "run"
    assert row["energy_j"] == pytest.approx(2800.0)  # its own device, not shared
    assert row["energy_per_unit_change_pct"] == pytest.approx(40.0)


def test_variability_groups_repeats_by_config_and_gpu(experiment, store):
    client = MlflowClient(store)
    seed_workload(client, "coloc", 4, [Row(duration_s=11, throughput=100.0, gpu="NVIDIA A100")],
                  start=T0 + 300)
    runs = data.load_runs("coloc")
    table = variability(runs, summarize_runs(runs))
    assert len(table) == 1  # the A100 run and the co-located rows have no repeat
    row = table.iloc[0]
    assert row["n"] == 2 and row["gpu"] == "NVIDIA H100 80GB HBM3"
    assert row["params"] == "batch-size=64" and row["rows_in_workload"] == 1
    assert row["duration_s_mean"] == pytest.approx(11.0)
    assert row["duration_s_cv"] == pytest.approx(np.std([10.0, 12.0], ddof=1) / 11.0)
    assert row["throughput_samples_per_s_cv"] == pytest.approx(np.std([100, 80], ddof=1) / 90)
    assert row["energy_j_cv"] == pytest.approx(np.std([2000.0, 2400.0], ddof=1) / 2200.0)


def test_time_to_target_max_and_min_and_in_variability():
    series = pd.concat([
        long("a", "val_acc", [10, 20, 30, 40], [0.5, 0.91, 0.93, 0.95]),
        long("b", "val_acc", [12, 24, 36], [0.6, 0.92, 0.94]),
        long("c", "val_acc", [10, 20], [0.5, 0.6]),
        long("a", "loss", [10, 20, 30], [2.0, 0.9, 0.4]),
    ])
    hit = time_to_target(series, "val_acc", 0.92).set_index("run_id")
    assert hit.loc["a", "seconds"] == 30 and hit.loc["a", "step"] == 2
    assert hit.loc["b", "seconds"] == 24
    assert np.isnan(hit.loc["c", "seconds"])
    low = time_to_target(series, "loss", 1.0, mode="min").set_index("run_id")
    assert low.loc["a", "seconds"] == 20
    with pytest.raises(ValueError, match="mode must be 'max' or 'min'"):
        time_to_target(series, "loss", 1.0, mode="up")
    runs = pd.DataFrame({"run_id": ["a", "b"], "experiment_id": "1", "workload": [1, 2],
                         "status": "FINISHED", "file": "t.py", "collocation": "-",
                         "param.lr": "0.1"})
    summary = pd.DataFrame({"run_id": ["a", "b"], "duration_s": [50.0, 50.0],
                            "energy_j": [1.0, 1.0]})
    table = variability(runs, summary, targets=hit.reset_index())
    assert table.iloc[0]["time_to_target_s_mean"] == pytest.approx(27.0)
    assert table.iloc[0]["time_to_target_s_cv"] == pytest.approx(np.std([30, 24], ddof=1) / 27)
    assert table.iloc[0]["gpu"] == "no GPU"


def test_correlation_exactly_one_and_minus_one():
    t = np.arange(0.0, 20.0, 0.25)
    series = pd.concat([long("r", "power", t, 100 + 2 * t), long("r", "util", t, 3 * t),
                        long("r", "idle", t, 50 - t), long("r", "sq", t, t ** 3)])
    pearson = correlate(series, ["power", "util", "idle", "sq"])
    assert pearson.loc["power", "util"] == pytest.approx(1.0)
    assert pearson.loc["power", "idle"] == pytest.approx(-1.0)
    assert pearson.loc["power", "sq"] < 0.99
    spearman = correlate(series, ["power", "sq"], method="spearman")
    assert spearman.loc["power", "sq"] == pytest.approx(1.0)  # monotonic, not linear
    wide = align(series, ["power"], bin_s=2.0)
    assert len(wide) == 10 and wide.iloc[0]["power"] == pytest.approx(100 + 2 * 0.875)
    with pytest.raises(ValueError, match="no samples of 'gpu'"):
        correlate(series, ["power", "gpu"])
    with pytest.raises(ValueError, match="method must be one of pearson, spearman"):
        correlate(series, method="kendall")


def test_correlation_pooled_over_runs_aligns_unequal_sampling():
    # two listeners sampling at different rates and offsets still line up in 1 s bins
    t_fast, t_slow = np.arange(0.0, 30.0, 0.1), np.arange(0.05, 30.0, 0.5)
    one = pd.concat([long("a", "x", t_fast, np.floor(t_fast)), long("a", "y", t_slow, -np.floor(t_slow))])
    two = one.assign(run_id="b", value=one["value"] * 2)
    pooled = correlate(pd.concat([one, two]), ["x", "y"])
    assert pooled.loc["x", "y"] == pytest.approx(-1.0)
    assert len(align(pd.concat([one, two]), ["x", "y"])) == 60


def test_workload_stp_when_rows_count_different_units():
    """A row that logged no throughput (slowdown by duration, unit "run") beside one that
    did (samples): STP, ANTT and energy vs serial still come from each row's own slowdown
    and work; only the workload's work total needs one unit."""
    from radtrack.compute.colocation import workload_table

    runs = pd.DataFrame([
        {"run_id": "p", "experiment": "e", "workload": "3", "tag.radtrack.role": "workload",
         "metric.summary/workload/energy_j": 900.0, "metric.summary/workload/duration_s": 10.0},
        {"run_id": "a", "experiment": "e", "workload": "3", "tag.radtrack.role": "row", "devices": "0"},
        {"run_id": "b", "experiment": "e", "workload": "3", "tag.radtrack.role": "row", "devices": "0"},
    ])
    inter = pd.DataFrame([
        {"experiment": "e", "workload": "3", "collocation": "-", "duration_s": 10.0, "note": "",
         "work_unit": "samples", "slowdown": 2.0, "throughput": 50.0, "solo_energy_per_unit_j": 1.0},
        {"experiment": "e", "workload": "3", "collocation": "-", "duration_s": 10.0, "note": "",
         "work_unit": "run", "slowdown": 1.25, "throughput": np.nan, "solo_energy_per_unit_j": 400.0},
    ])
    row = workload_table(runs, inter).iloc[0]
    assert row["stp"] == pytest.approx(1 / 2.0 + 1 / 1.25)
    assert row["antt"] == pytest.approx((2.0 + 1.25) / 2)
    # 1 J/sample x 500 samples + 400 J for the one run
    assert row["serial_energy_j"] == pytest.approx(900.0)
    assert row["energy_vs_serial_pct"] == pytest.approx(0.0)
    assert pd.isna(row["work"]) and "no common work total" in row["note"]
