"""A run's samples cut to its span (issue 38): the sink stores no sample stamped outside the
run's span, whenever it arrives, and its traces and summaries cover the span exactly
(radtrack/store/spans.py), on a real SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import made_store

from radtrack.store.sink import Sink
from radtrack.store.spans import span_frame
from radtrack.store.spool import Span
from radtrack.vocab import schema

T0 = 1_700_000_000.0


def _line(t: float, values: dict[str, float]) -> str:
    return json.dumps({"type": "sample", "t": t, "v": values})


def _stored(db: Path, key: str) -> pd.DataFrame:
    with sqlite3.connect(db) as con:
        return pd.read_sql_query("SELECT timestamp, step, value FROM metrics WHERE key = ? "
                                 "ORDER BY timestamp, step", con, params=(key,))


def test_the_sink_stores_the_span_only_and_its_ends(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(made_store(store))
    run_id = client.create_run(client.create_experiment("spans")).info.run_id
    sink = Sink.unbound(tmp_path / "spool", "row")
    sink.hold()
    sink.feed("top", json.dumps({"type": "hello", "listener": "top", "metrics": [], "tags": {}}))
    # read before the release (a listener waited for): spooled, not the run's
    for i in range(3):
        sink.feed("top", _line(T0 - 0.3 + 0.1 * i, {"top/a_pct": 100.0, "top/energy_j": 10.0 * i}))
    sink.bind(client, run_id, store)
    sink.set_start(T0)
    for i in range(9):  # readings to 0.85 s, the counter at 100 W
        sink.feed("top", _line(T0 + 0.05 + 0.1 * i, {"top/a_pct": 50.0 + i, "top/energy_j": 30 + 100 * (0.05 + 0.1 * i)}))
    end = sink.set_end(T0 + 0.9)
    # the listener's final reading comes after the end, shipped or not yet: not the run's
    sink.feed("top", _line(T0 + 0.97, {"top/a_pct": 0.0, "top/energy_j": 30 + 97.0}))
    assert sink.close(retry_for=10)
    db = Path(store.removeprefix("sqlite:///"))
    pts = _stored(db, "system/top/a_pct")
    t = pts["timestamp"].to_numpy() / 1000
    assert t.min() >= T0 and t.max() <= end
    assert t[0] == pytest.approx(T0, abs=0.002) and t[-1] == pytest.approx(end, abs=0.002)
    # 9 readings inside (0.05 .. 0.85 s) and the span's two ends: the start interpolated
    # between the last reading before it and the first in it, the end between the last in it
    # and the final one after it
    assert len(pts) == 11 and pts["step"].is_unique  # the start point: step 0, the last one before the span
    assert pts["value"].iloc[0] == pytest.approx(100 + (50 - 100) * 0.1 / 0.15, rel=1e-4)
    assert pts["value"].iloc[-1] == pytest.approx(58 + (0 - 58) * 0.05 / 0.12, rel=1e-4)
    m = client.get_run(run_id).data.metrics
    mean = m[schema.summary_key("top/a_pct", "mean")]
    assert mean * 0.9 == pytest.approx(np.trapezoid(pts["value"], t), rel=1e-3)
    assert m[schema.summary_key("top/a_pct", schema.READINGS_STAT)] == 9
    # the counter over the span: 100 W x 0.9 s
    assert m[schema.summary_key("top/energy_j")] == pytest.approx(90.0, rel=1e-6)
    assert m[schema.summary_key("top/energy_j", schema.READINGS_STAT)] == 9
    assert len(_stored(db, "system/top/energy_j")) == 11


def test_a_series_with_one_reading_is_held_over_the_span_and_counted_once() -> None:
    frame = pd.DataFrame({"time": [T0 + 0.5], "step": [0], "top/x_pct": [40.0]})
    out, counts = span_frame(frame, T0, T0 + 2)
    assert counts == {"top/x_pct": 1}
    assert out["time"].tolist() == [T0, T0 + 0.5, T0 + 2]
    assert out["top/x_pct"].tolist() == [40.0, 40.0, 40.0]


def test_readings_either_side_only_give_the_ends_and_a_reading_at_an_end_needs_no_end_point() -> None:
    frame = pd.DataFrame({"time": [T0 - 1, T0 + 3], "step": [0, 1], "k": [1.0, 2.0]})
    out, counts = span_frame(frame, T0, T0 + 2)
    assert counts == {"k": 0} and out["k"].tolist() == pytest.approx([1.25, 1.75])
    frame = pd.DataFrame({"time": [T0, T0 + 1, T0 + 3], "step": [0, 1, 2], "k": [1.0, 2.0, 4.0]})
    out, counts = span_frame(frame, T0, T0 + 2)
    assert out["time"].tolist() == [T0, T0 + 1, T0 + 2] and out["k"].tolist() == [1.0, 2.0, 3.0]
    assert counts == {"k": 2}


def test_an_open_span_stores_every_reading() -> None:
    assert Span().holds(0.0) and Span(1.0, None).holds(5.0)
    assert not Span(1.0, 2.0).holds(2.0001) and not Span(1.0, 2.0).holds(0.9999)
    frame = pd.DataFrame({"time": [T0, T0 + 1], "step": [0, 1], "k": [1.0, 2.0]})
    out, counts = span_frame(frame, None, None)
    assert len(out) == 2 and counts == {"k": 2}


def test_a_counter_read_only_outside_a_short_span_is_interpolated_at_its_ends() -> None:
    # the counter every 5 s (at -1 s and 4 s) around a 2-s span; power read inside it
    frame = pd.DataFrame({"time": [T0 - 1, T0 + 1, T0 + 4], "step": [0, 1, 2],
                          "smi/gpu0/energy_j": [0.0, np.nan, 500.0],
                          "smi/gpu0/power_w": [np.nan, 100.0, np.nan]})
    out, counts = span_frame(frame, T0, T0 + 2)
    assert counts == {"smi/gpu0/energy_j": 0, "smi/gpu0/power_w": 1}
    energy = out[["time", "smi/gpu0/energy_j"]].dropna()
    assert energy["time"].tolist() == [T0, T0 + 2]
    assert energy["smi/gpu0/energy_j"].tolist() == pytest.approx([100.0, 300.0])
    # a series with readings on one side only, none inside, is not the run's
    frame = pd.DataFrame({"time": [T0 + 3, T0 + 4], "step": [0, 1], "k": [1.0, 2.0],
                          "j": [5.0, 6.0]})
    out, counts = span_frame(frame, T0, T0 + 2)
    assert out.empty and counts == {}


def test_a_rate_first_read_as_its_listener_stopped_is_held_over_a_short_span() -> None:
    # top started late into a 1.5-s span: its first tick (no CPU %: a rate needs two) inside,
    # its second, the first CPU %, as it stopped 0.2 s after the end
    frame = pd.DataFrame({"time": [T0 + 0.9, T0 + 1.7], "step": [0, 1],
                          "top/cpu_pct": [np.nan, 40.0], "top/mem_used_mib": [900.0, 910.0]})
    out, counts = span_frame(frame, T0, T0 + 1.5)
    assert counts == {"top/cpu_pct": 0, "top/mem_used_mib": 1}
    cpu = out[["time", "top/cpu_pct"]].dropna()
    assert cpu["time"].tolist() == [T0, T0 + 1.5] and cpu["top/cpu_pct"].tolist() == [40.0, 40.0]
    # a first reading long after the end (more than one interval) is not the run's
    frame = pd.DataFrame({"time": [T0 + 0.9, T0 + 1.4, T0 + 3.0], "step": [0, 1, 2],
                          "top/cpu_pct": [np.nan, np.nan, 40.0], "top/mem_used_mib": [900.0, 905.0, 910.0]})
    out, counts = span_frame(frame, T0, T0 + 1.5)
    assert "top/cpu_pct" not in counts and "top/cpu_pct" not in out
    # nor one after a series already read before the span (interpolated instead)
    frame = pd.DataFrame({"time": [T0 - 0.5, T0 + 1.7], "step": [0, 1], "k": [10.0, 20.0]})
    out, counts = span_frame(frame, T0, T0 + 1.5)
    assert counts == {"k": 0} and out["k"].iloc[0] == pytest.approx(10 + 10 * 0.5 / 2.2)
