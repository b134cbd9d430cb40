"""radtrack.analysis.data on a store seeded the way the launcher writes runs."""

from __future__ import annotations

import pandas as pd
import pytest
from mlflow import MlflowClient
from support import made_store
from test_analysis_seed import T0, Row, seed_workload

from radtrack.analysis import data
from radtrack.analysis.data import (
    list_metrics,
    load_run_records,
    load_runs,
    load_series,
    read_telemetry,
)
from radtrack.errors import RadtrackError


@pytest.fixture
def seeded(store: str, tmp_path, monkeypatch) -> dict[str, list[str]]:
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    solo = seed_workload(client, "exp", 1, [Row(duration_s=10)])
    pair = seed_workload(client, "exp", 2, [Row(duration_s=15, parquet=False, collocation="mps"),
                                            Row(duration_s=12, collocation="mps",
                                                params={"batch-size": "32"})],
                         start=T0 + 100)
    return {"solo": solo, "pair": pair}


def test_load_runs_one_row_per_child_with_typed_columns(seeded):
    runs = load_runs("exp")
    assert sorted(runs["run_id"]) == sorted(seeded["solo"] + seeded["pair"])
    solo = runs.set_index("run_id").loc[seeded["solo"][0]]
    assert solo["run_name"] == "exp-1 A"
    assert solo["workload"] == 1 and solo["letter"] == "A"
    assert solo["status"] == "FINISHED"
    assert solo["start_time"] == pd.Timestamp(T0, unit="s", tz="UTC")
    assert solo["duration_s"] == pytest.approx(10.0)
    assert solo["file"] == "train.py" and solo["devices"] == "0" and solo["collocation"] == "-"
    assert solo["param.batch-size"] == "64"
    assert solo["tag.radtrack.gpu.names"] == "NVIDIA H100 80GB HBM3"
    assert solo["metric.summary/duration_s"] == 10.0
    assert isinstance(runs["start_time"].dtype, pd.DatetimeTZDtype)
    assert str(runs["start_time"].dt.tz) == "UTC"
    assert runs["parent_run_id"].notna().all()


def test_load_runs_filters_and_parents(seeded, store):
    assert list(load_runs("exp", workload=2)["letter"]) == ["A", "B"]
    assert len(load_runs("exp", workload="1")) == 1
    with_parents = load_runs("exp", include_parents=True)
    assert (with_parents["tag.radtrack.role"] == "workload").sum() == 2
    by_id = load_runs(MlflowClient(store).get_experiment_by_name("exp").experiment_id)
    assert len(by_id) == 3
    assert list(load_runs(run_ids=seeded["solo"])["run_id"]) == seeded["solo"]


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (
        isinstance(value, float) and value != value)


def _same(a: object, b: object) -> bool:
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    return type(a) is type(b) and a == b


def test_run_records_are_the_frame_rows_without_a_frame(seeded, store):
    client = MlflowClient(store)
    exp = client.get_experiment_by_name("exp")
    # a run still RUNNING (no end time) and one a script started itself (no radtrack tags)
    running = client.create_run(exp.experiment_id, run_name="live", start_time=T0 * 1000 - 5)
    client.log_param(running.info.run_id, "lr", "0.1")
    plain = client.create_run(exp.experiment_id, run_name="plain", start_time=T0 * 1000 + 50)
    client.set_terminated(plain.info.run_id, end_time=T0 * 1000 + 60_050)
    for kwargs in ({"experiment": "exp", "include_parents": True}, {"experiment": exp},
                   {"run_ids": [plain.info.run_id, seeded["solo"][0]]}):
        recs = load_run_records(**kwargs)
        frame = load_runs(**kwargs)
        assert list(frame.columns) == list(recs[0])
        rows = frame.to_dict("records")
        assert len(rows) == len(recs)
        for want, got in zip(rows, recs, strict=True):
            assert [c for c in want if not _same(want[c], got[c])] == [], (want, got)
    recs = {r["run_name"]: r for r in load_run_records("exp")}
    assert recs["live"]["end_time"] is pd.NaT and recs["live"]["workload"] is None
    assert recs["live"]["param.lr"] == "0.1" and recs["plain"]["param.lr"] is None
    assert recs["plain"]["end_time"] == pd.Timestamp(T0 * 1000 + 60_050, unit="ms", tz="UTC")
    # sorted by start time: the live run started first, the plain one after the solo run
    names = [r["run_name"] for r in load_run_records("exp")]
    assert names[0] == "live" and names.index("plain") == names.index("exp-1 A") + 1
    frame = load_runs("exp")
    assert isinstance(frame["end_time"].dtype, pd.DatetimeTZDtype)
    assert str(frame["workload"].dtype) == "Int64"


def test_unknown_experiment_and_run_are_named(seeded):
    with pytest.raises(RadtrackError, match="experiment 'nope' not found.*known: .*exp"):
        load_runs("nope")
    with pytest.raises(RadtrackError, match="run 'deadbeef' not found"):
        load_runs(run_ids=["deadbeef"])


def test_series_from_parquet_and_history_agree(seeded):
    with_parquet, history_only = seeded["pair"][1], seeded["pair"][0]
    series = load_series([with_parquet, history_only], metrics=["smi/gpu0/power_w"])
    assert list(series.columns) == data.SERIES_COLUMNS
    for run_id, n in ((with_parquet, 25), (history_only, 31)):
        one = series[series["run_id"] == run_id]
        assert len(one) == n  # every 0.5 s sample, both ends included
        assert one["seconds"].iloc[0] == pytest.approx(0.0)
        assert one["seconds"].iloc[-1] == pytest.approx((n - 1) * 0.5)
        assert list(one["step"]) == list(range(n))
        assert (one["value"] == 200.0).all()
    assert series["time"].iloc[0] == pd.Timestamp(T0 + 100, unit="s", tz="UTC")


def test_parquet_is_read_instead_of_history(store, tmp_path, monkeypatch):
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache"))
    (run_id,) = seed_workload(MlflowClient(made_store(store)), "pq", 1, [Row(duration_s=4, history=False)])
    series = load_series([run_id])
    # smi samples exist only in the Parquet trace, throughput only in the metric history
    assert set(series["metric"]) == {"smi/gpu0/power_w", "smi/gpu0/gpu_util_pct",
                                     "smi/gpu0/mem_used_mib", "smi/gpu0/temp_c",
                                     "smi/gpu0/energy_j", "throughput_samples_per_s"}
    assert (series["metric"] == "smi/gpu0/power_w").sum() == 9
    assert (series["metric"] == "throughput_samples_per_s").sum() == 4
    assert not series["metric"].str.startswith("summary/").any()


def test_unknown_metric_is_named(seeded):
    with pytest.raises(RadtrackError, match="unknown metric 'smi/gpu9/power_w'"):
        load_series(seeded["solo"], metrics=["smi/gpu0/power_w", "smi/gpu9/power_w"])


def test_list_metrics_and_read_telemetry_cache(seeded, tmp_path):
    run_id = seeded["solo"][0]
    keys = list_metrics([run_id])
    assert "smi/gpu0/energy_j" in keys and "throughput_samples_per_s" in keys
    assert keys == sorted(keys) and not any(k.startswith("summary/") for k in keys)
    assert "summary/duration_s" in list_metrics([run_id], include_summary=True)
    wide = read_telemetry(run_id, "smi")
    assert list(wide.columns[:2]) == ["time", "step"] and len(wide) == 21
    cached = tmp_path / "cache" / run_id / "telemetry" / "smi.parquet"
    assert cached.is_file()
    # A FINISHED run's trace is served from the cache without asking the store again.
    pd.DataFrame({"time": [1.0], "step": [0]}).to_parquet(cached)
    assert len(read_telemetry(run_id, "smi")) == 1
    with pytest.raises(RadtrackError, match="no telemetry artifact 'telemetry/dcgm.parquet'"):
        read_telemetry(run_id, "dcgm")


def test_a_finished_runs_trace_listing_is_read_once(seeded, store, monkeypatch):
    """A FINISHED run's artifacts are final: its listing is kept; any other is read again."""
    listed = []
    original = MlflowClient.list_artifacts

    def counting(self, run_id, path=None):
        listed.append(run_id)
        return original(self, run_id, path)

    monkeypatch.setattr(MlflowClient, "list_artifacts", counting)
    solo = seeded["solo"][0]
    first = data.telemetry_listeners(solo, store, status="FINISHED")
    assert "smi" in first and data.telemetry_listeners(solo, store, status="FINISHED") == first
    assert listed == [solo]
    data.telemetry_listeners(solo, store, status="RUNNING")
    data.telemetry_listeners(solo, store)
    assert listed == [solo] * 3
    # a run's series read goes through the same listing
    load_series([solo], ["smi/gpu0/power_w"])
    assert listed == [solo] * 3


def test_a_local_artifact_folder_is_listed_without_mlflow(seeded, store, monkeypatch):
    """With the run's artifact URI (a record's ``artifact_uri``), a local folder is listed
    directly; the answer is the one MLflow's listing gives."""
    solo, bare = seeded["solo"][0], seeded["pair"][0]  # the pair's A row stored no Parquet
    recs = {r["run_id"]: r for r in load_run_records("exp")}
    expected = {run: data.telemetry_listeners(run, store) for run in (solo, bare)}
    assert "smi" in expected[solo] and expected[bare] == []

    def no_listing(*args, **kwargs):
        raise AssertionError("listed through MLflow")

    monkeypatch.setattr(MlflowClient, "list_artifacts", no_listing)
    for run in (solo, bare):
        assert recs[run]["artifact_uri"]
        assert data.telemetry_listeners(run, store, artifact_uri=recs[run]["artifact_uri"]) \
            == expected[run]


def test_a_local_trace_is_copied_without_mlflow(seeded, store, tmp_path, monkeypatch):
    """With the run's status and artifact URI, a trace in a local artifact folder is copied
    into the cache without MLflow's download (its run and logged-model look-ups: the page's
    summary reads several traces per run); the frame is the one MLflow's download gives, and
    a trace that is not there still gets MLflow's answer, named."""
    solo = seeded["solo"][0]
    rec = {r["run_id"]: r for r in load_run_records("exp")}[solo]
    expected = read_telemetry(solo, "smi")
    monkeypatch.setenv(data.CACHE_ENV, str(tmp_path / "cache2"))  # an empty cache

    def no_download(*args, **kwargs):
        raise AssertionError("downloaded through MLflow")

    monkeypatch.setattr(MlflowClient, "download_artifacts", no_download)
    wide = read_telemetry(solo, "smi", status=rec["status"], artifact_uri=rec["artifact_uri"])
    pd.testing.assert_frame_equal(wide, expected)
    assert (tmp_path / "cache2" / solo / "telemetry" / "smi.parquet").is_file()
    with pytest.raises(AssertionError, match="downloaded through MLflow"):  # not there: MLflow's turn
        read_telemetry(solo, "dcgm", status=rec["status"], artifact_uri=rec["artifact_uri"])


def test_a_scripts_metric_history_reads_as_load_series_does(seeded, store):
    """metric_history (the page's read of a script's metrics, without reading the run
    first) gives load_series' frame for a key stored under its own name."""
    solo = seeded["solo"][0]
    rec = {r["run_id"]: r for r in load_run_records("exp")}[solo]
    key = "throughput_samples_per_s"
    start = pd.Timestamp(rec["start_time"]).timestamp()
    expected = load_series([solo], [key])
    got = data.metric_history(solo, [key], start)
    assert len(got) > 1
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))
    assert data.metric_history(solo, ["no_such_metric"], start).empty
