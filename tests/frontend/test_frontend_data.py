"""The frontend's cached data source on a store seeded the way radtrack writes runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic import (
    append_samples,
    new_store,
    seed_workload,
    synthetic_values,
)

from radtrack.analysis import data as analysis
from radtrack.frontend.data import DataSource, Series, long_frame

METRICS = ["smi/gpu0/power_w", "dcgm/gpu0/sm_active_pct", "top/cpu_pct"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("frontend-data")
    uri = new_store(root)
    finished = seed_workload(uri, "exp", 1, ["A", "B"], metrics=METRICS, points=300,
                             artifact_root=root / "artifacts")
    live = seed_workload(uri, "exp", 2, ["A"], metrics=METRICS, points=50, status="RUNNING",
                         artifact_root=root / "artifacts", epochs=0)
    return {"uri": uri, "finished": finished, "live": live[0], "root": root}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts calls into radtrack.analysis, to see what the cache spares."""
    calls = {"read_telemetry": 0, "load_series": 0, "load_runs": 0, "list_metrics": 0}
    for name in calls:
        real = getattr(analysis, name)

        def wrapper(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(analysis, name, wrapper)
    return calls


def test_listener_series_come_from_parquet_at_full_resolution(seeded, counted) -> None:
    source = DataSource(seeded["uri"])
    run = seeded["finished"][0]
    series = source.series([run.run_id], METRICS)
    power = series[(run.run_id, "smi/gpu0/power_w")]
    expected = synthetic_values("smi/gpu0/power_w", 300, "exp-1A")
    np.testing.assert_allclose(power.value, expected)
    np.testing.assert_allclose(power.seconds, np.arange(300.0), atol=1e-3)
    assert power.x("wall")[0] == pytest.approx(run.start, abs=1e-3)
    assert counted["read_telemetry"] == 3 and counted["load_series"] == 0


def test_cache_serves_repeat_requests_without_reading_the_store(seeded, counted) -> None:
    source = DataSource(seeded["uri"])
    ids = [r.run_id for r in seeded["finished"]]
    first = source.series(ids, METRICS[:2])
    reads = dict(counted)
    again = source.series(ids, METRICS[:2])
    assert counted == reads
    assert all(again[k] is first[k] for k in first)
    source.series(ids, METRICS)  # only the new metric is read
    assert counted["read_telemetry"] == reads["read_telemetry"] + len(ids)


def test_script_metrics_come_from_mlflow_history(seeded) -> None:
    source = DataSource(seeded["uri"])
    run = seeded["finished"][1]
    loss = source.series([run.run_id], ["loss"])[(run.run_id, "loss")]
    assert loss.step.tolist() == [0, 1, 2, 3, 4]
    assert np.all(np.diff(loss.value) < 0.1)  # a decaying loss curve


def test_a_metric_a_run_lacks_is_an_empty_series(seeded) -> None:
    source = DataSource(seeded["uri"])
    run = seeded["finished"][0]
    missing = source.series([run.run_id], ["smi/gpu1/power_w"])[(run.run_id, "smi/gpu1/power_w")]
    assert len(missing) == 0


def test_running_run_is_refreshed_after_the_refresh_interval(seeded, counted) -> None:
    clock = FakeClock()
    source = DataSource(seeded["uri"], refresh_s=2.0, clock=clock)
    live = seeded["live"]
    before = source.series([live.run_id], ["top/cpu_pct"])[(live.run_id, "top/cpu_pct")]
    assert len(before) == 50  # from MLflow history: a running run has no Parquet trace yet
    append_samples(seeded["uri"], live, first=50, count=25, metrics=["top/cpu_pct"])
    clock.now += 1.0
    cached = source.series([live.run_id], ["top/cpu_pct"])[(live.run_id, "top/cpu_pct")]
    assert len(cached) == 50
    clock.now += 1.5
    fresh = source.series([live.run_id], ["top/cpu_pct"])[(live.run_id, "top/cpu_pct")]
    assert len(fresh) == 75
    assert source.any_live([live.run_id])


def test_finished_runs_are_never_re_read(seeded, counted) -> None:
    clock = FakeClock()
    source = DataSource(seeded["uri"], clock=clock)
    ids = [r.run_id for r in seeded["finished"]]
    source.series(ids, METRICS[:1])
    source.metric_keys(ids)
    reads = dict(counted)
    clock.now += 3600
    source.series(ids, METRICS[:1])
    source.metric_keys(ids)
    assert counted == reads
    assert not source.any_live(ids)


def test_metric_keys_and_experiment_listing(seeded) -> None:
    source = DataSource(seeded["uri"])
    keys = source.metric_keys([seeded["finished"][0].run_id])
    assert keys == sorted([*METRICS, "loss", "throughput_samples_per_s"])
    assert source.experiments() == ["exp"]
    runs = source.experiment_runs("exp")
    assert set(runs["tag.radtrack.role"]) == {"workload", "row"}


def test_a_listed_experiment_is_searched_without_a_name_lookup(seeded, monkeypatch) -> None:
    """The page lists the experiments; a click on one then searches its runs straight away
    (the name lookup was a fifth of a cold listing), and the listing's rows are records."""
    from mlflow import MlflowClient

    source = DataSource(seeded["uri"])
    unlisted = source.experiment_rows("exp")  # not listed yet: looked up by name
    assert source.experiments() == ["exp"]
    source.listing_ttl_s = 0.0

    def no_lookup(*args, **kwargs):
        raise AssertionError("a listed experiment was looked up by name again")

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", no_lookup)
    rows = source.experiment_rows("exp")
    assert [r["run_id"] for r in rows] == [r["run_id"] for r in unlisted]
    assert rows is not unlisted  # read again (lifetime 0), not the cached list
    row = next(r for r in rows if r["tag.radtrack.role"] == "workload")
    assert row["letter"] is None  # a value the run lacks is None in a record
    assert isinstance(row["start_time"], pd.Timestamp) and str(row["start_time"].tz) == "UTC"


def test_long_frame_is_what_the_analysis_functions_take(seeded) -> None:
    source = DataSource(seeded["uri"])
    ids = [r.run_id for r in seeded["finished"]]
    frame = long_frame(source.series(ids, METRICS[:2]))
    assert list(frame.columns) == ["run_id", "metric", "seconds", "time", "step", "value"]
    assert len(frame) == 2 * 2 * 300
    reference = analysis.load_series(ids, METRICS[:2], tracking_uri=seeded["uri"])
    merged = frame.merge(reference, on=["run_id", "metric", "step"], suffixes=("", "_ref"))
    assert len(merged) == len(frame)
    np.testing.assert_allclose(merged["value"], merged["value_ref"])
    np.testing.assert_allclose(merged["seconds"], merged["seconds_ref"], atol=1e-6)


def test_unknown_x_mode_is_rejected(seeded) -> None:
    source = DataSource(seeded["uri"])
    run = seeded["finished"][0]
    series = source.series([run.run_id], METRICS[:1])[(run.run_id, METRICS[0])]
    with pytest.raises(ValueError, match="unknown x axis mode 'epoch'"):
        series.x("epoch")


def test_store_is_not_written(seeded) -> None:
    db = Path(seeded["root"] / "mlflow.db")
    before = db.stat().st_mtime_ns
    source = DataSource(seeded["uri"])
    ids = [r.run_id for r in seeded["finished"]]
    source.series(ids, METRICS)
    source.metric_keys(ids)
    source.experiment_runs("exp")
    assert db.stat().st_mtime_ns == before


def test_summary_table_reads_stored_summaries_and_computes_the_live_run(seeded, tmp_path,
                                                                         monkeypatch) -> None:
    import pandas as pd

    from radtrack.analysis.run_summaries import summarize_runs
    from radtrack.frontend.summaries import summary_frame

    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path / "cache"))
    source = DataSource(seeded["uri"])
    finished = [r.run_id for r in seeded["finished"]]
    ids = [*finished, seeded["live"].run_id]
    table = summary_frame(source, source.runs(ids)).set_index("run_id")
    assert not any(c.endswith("_p95") for c in table.columns)
    # Finished runs: only power (energy integrated, no counter) and the script's throughput
    # were read into the cache; the live run has no stored summaries, so its samples were.
    cached = set(source._series)
    for run_id in finished:
        assert {m for r, m in cached if r == run_id} == {"smi/gpu0/power_w",
                                                         "throughput_samples_per_s"}
    assert (seeded["live"].run_id, "dcgm/gpu0/sm_active_pct") in cached
    keys = analysis.list_metrics(ids, tracking_uri=seeded["uri"])
    full = long_frame(source.series(ids, keys))
    expected = summarize_runs(source.runs(ids), tracking_uri=seeded["uri"], series=full,
                              quantiles=False).set_index("run_id")
    # samples: counted where the series were read (the live run, every run of ``expected``);
    # a finished run's comes from its stored counts, which these seeded runs lack
    numeric = [c for c in expected.columns if pd.api.types.is_numeric_dtype(expected[c])
               and c != "samples"]
    assert sorted(table.columns) == sorted(expected.columns)
    pd.testing.assert_frame_equal(table.loc[ids, numeric], expected.loc[ids, numeric],
                                  check_exact=False, rtol=1e-9)
    live = seeded["live"].run_id
    assert table.loc[live, "samples"] == expected.loc[live, "samples"] > 0
    assert table.loc[seeded["live"].run_id, "sm_active_pct_mean"] > 0


def test_summary_cache_summarises_each_run_once_with_the_same_values(seeded, tmp_path,
                                                                     monkeypatch) -> None:
    """Ticking one more run summarises only that run (FINISHED runs are cached for good,
    the live one again after refresh_s); the rows equal one summary of the whole selection."""
    import pandas as pd

    from radtrack.frontend.summaries import SummaryCache, summary_frame

    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path / "cache"))
    clock = [0.0]
    source = DataSource(seeded["uri"], refresh_s=2.0, clock=lambda: clock[0])
    cache = SummaryCache(source)
    finished = [r.run_id for r in seeded["finished"]]
    live = seeded["live"].run_id
    ids = [*finished, live]
    for i in range(1, len(ids) + 1):
        table = cache.table(ids[:i])
        assert list(table["run_id"]) == ids[:i]
    assert sorted(cache.summarised) == sorted(ids)  # each run once
    cache.table(ids)
    assert sorted(cache.summarised) == sorted(ids)
    clock[0] = 5.0
    cache.table(ids)
    assert cache.summarised[len(ids):] == [live]  # only the live run is summarised again

    whole = summary_frame(DataSource(seeded["uri"]), source.runs(ids)).set_index("run_id")
    table = cache.table(ids).set_index("run_id")
    # the cache adds the checks (checks, _tips, _flagged: frontend/summaries.with_checks)
    numeric = [c for c in table.columns if c in whole and pd.api.types.is_numeric_dtype(whole[c])]
    assert {"checks", "_tips", "_flagged"} <= set(table.columns)
    pd.testing.assert_frame_equal(table.loc[ids, numeric], whole.loc[ids, numeric],
                                  check_exact=False, rtol=1e-9)


def test_series_by_x_sorts_steps_once_and_time_not_at_all():
    seconds = np.array([0.0, 1.0, 2.0, 3.0])
    series = Series("r", "loss", 100.0, seconds, np.array([0, 2, 1, 3]), np.array([4.0, 3.0, 2.0, 1.0]))
    assert series.by_x("seconds") is series and series.by_x("wall") is series
    by_step = series.by_x("step")
    assert by_step.step.tolist() == [0, 1, 2, 3] and by_step.value.tolist() == [4.0, 2.0, 3.0, 1.0]
    assert series.by_x("step") is by_step  # sorted once
    ordered = Series("r", "loss", 100.0, seconds, np.arange(4), np.ones(4))
    assert ordered.by_x("step") is ordered
    with pytest.raises(ValueError, match="unknown x axis mode 'epoch'"):
        series.by_x("epoch")


def test_no_metric_ticked_reads_no_metric_keys(seeded, monkeypatch) -> None:
    """Every picker tick redraws the chart; before a metric is ticked that is the empty
    chart, answered without reading the runs' metric keys (a trace listing each)."""
    from radtrack.frontend.callbacks_chart import chart_answer

    source = DataSource(seeded["uri"])
    ids = [r.run_id for r in seeded["finished"]]

    def no_keys(*args, **kwargs):
        raise AssertionError("metric keys read with no metric ticked")

    monkeypatch.setattr(DataSource, "metric_keys", no_keys)
    figure, _ = chart_answer(source, ids, [], "seconds", 1, [], None)
    assert figure["data"] == [] and "radtrack" not in figure
    with pytest.raises(AssertionError, match="metric keys read"):
        chart_answer(source, ids, [METRICS[0]], "seconds", 1, [], None)


def test_summary_shows_stored_energy_intervals_and_flags(tmp_path, monkeypatch) -> None:
    """The Summary tab carries a run's energy interval and, where it is over the threshold,
    the reason (issue 30), as ``radtrack report`` does; runs without intervals keep the
    table as it was."""
    import time

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from radtrack.frontend.summaries import summary_frame

    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path / "cache"))
    uri = new_store(tmp_path)
    bursty, steady = seed_workload(uri, "err", 1, ["A", "B"], metrics=METRICS, points=60, epochs=0)
    now = int(time.time() * 1000)
    key = "summary/smi/gpu0/energy_j"
    for run, ci, flag in ((bursty, 14.0, 1.0), (steady, 0.4, 0.0)):
        MlflowClient(uri).log_batch(run.run_id, metrics=[
            Metric(key, 1000.0, now, 0), Metric(key + "_ci95_pct", ci, now, 0),
            Metric(key + "_ci95_flag", flag, now, 0)])
    source = DataSource(uri)
    table = summary_frame(source, source.runs([bursty.run_id, steady.run_id])).set_index("run_id")
    assert table.loc[bursty.run_id, "energy_j_ci95_pct"] == pytest.approx(14.0)
    assert "bursty load near the sensor's period" in table.loc[bursty.run_id, "energy_note"]
    assert table.loc[steady.run_id, "energy_j_ci95_pct"] == pytest.approx(0.4)
    assert table.loc[steady.run_id, "energy_note"] == ""
    columns = list(table.columns)
    assert columns.index("energy_j_ci95_pct") == columns.index("energy_j") + 1
