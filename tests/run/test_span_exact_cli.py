"""Span-exact runs (issue 38), end to end on CPU: a sheet with two co-located rows of
different lengths through the real CLI, top at 0.1 s, a real SQLite store. The short run's
series, summaries and monitoring cost cover its own span (its script's start to its end),
not the workload's: its listeners stop as its script ends while its partner runs on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
from support import radtrack_cli

from radtrack.store import schema

# burns CPU for N seconds, then writes the CPU seconds it used (the truth to compare with)
SCRIPT = """\
import sys, time
end = time.time() + float(sys.argv[1])
x = 0
while time.time() < end:
    x += 1
open(sys.argv[2], "w").write(str(time.process_time()))
"""
SHORT_S, LONG_S = 1.5, 4.0
PROC_CPU = "top/proc/cpu_pct"


def _points(db: Path, run_id: str, key: str) -> pd.DataFrame:
    with sqlite3.connect(db) as con:
        return pd.read_sql_query(
            "SELECT timestamp, step, value FROM metrics WHERE run_uuid = ? AND key = ? "
            "ORDER BY timestamp, step", con, params=(run_id, key))


def test_a_short_co_located_run_covers_its_own_span_only(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    (tmp_path / "burn.py").write_text(SCRIPT)
    (tmp_path / "sheet.csv").write_text(
        "Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval\n"
        f"span,1,,-,burn.py,top,{SHORT_S} {tmp_path / 'short.cpu'},0.1\n"
        f"span,1,,-,burn.py,top,{LONG_S} {tmp_path / 'long.cpu'},0.1\n")
    p = radtrack_cli(str(tmp_path / "sheet.csv"), timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]

    client = MlflowClient(store)
    exp = client.get_experiment_by_name("span")
    rows = [r for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get(schema.ROLE) == schema.ROLE_ROW]
    short, long = sorted(rows, key=lambda r: r.data.metrics[schema.DURATION_KEY])
    db = Path(store.removeprefix("sqlite:///"))
    duration = short.data.metrics[schema.DURATION_KEY]
    assert SHORT_S <= duration < LONG_S - 1.0
    start_ms, end_ms = short.info.start_time, short.info.end_time
    assert abs((end_ms - start_ms) / 1000 - duration) < 0.002  # the run's span, as stored

    # every series of the short run lies in its span; the partner's go on well past it
    with sqlite3.connect(db) as con:
        stamps = con.execute("SELECT key, MIN(timestamp), MAX(timestamp), COUNT(*) FROM metrics "
                             "WHERE run_uuid = ? AND key LIKE 'system/top/%' GROUP BY key",
                             (short.info.run_id,)).fetchall()
        partner_last = con.execute("SELECT MAX(timestamp) FROM metrics WHERE run_uuid = ? AND "
                                   "key = ?", (long.info.run_id, "system/" + PROC_CPU)).fetchone()[0]
    assert stamps and {k for k, *_ in stamps} >= {"system/" + PROC_CPU, "system/top/cpu_pct"}
    for key, first, last, _ in stamps:
        assert start_ms <= first and last <= end_ms, (key, first - start_ms, last - end_ms)
    assert partner_last > end_ms + 1500  # the readings the short run no longer gets

    # its series cover the span: the points at its ends, its readings between them
    m = short.data.metrics
    for key in (PROC_CPU, "top/cpu_pct", "top/mem_used_mib"):
        pts = _points(db, short.info.run_id, "system/" + key)
        t = pts["timestamp"].to_numpy() / 1000
        assert t[0] - start_ms / 1000 < 0.002 and end_ms / 1000 - t[-1] < 0.002, key
        assert pts["step"].is_unique, key  # each point once, the span's ends included
        integral = float(np.trapezoid(pts["value"].to_numpy(), t))
        mean = m[schema.summary_key(key, "mean")]
        # mean x duration = the integral of the stored series, within 1 %
        assert abs(mean * duration - integral) <= 0.01 * abs(integral) + 1e-9, (key, mean * duration, integral)
        n = m[schema.summary_key(key, schema.READINGS_STAT)]
        # the readings, not the two end points (a loaded host can hold top's start for 1-2 s)
        assert n == len(pts) - 2 and n >= 1, key

    # its process CPU is its own span's: mean x duration = the CPU seconds its script used
    used = float((tmp_path / "short.cpu").read_text())
    measured = m[schema.summary_key(PROC_CPU, "mean")] * duration / 100
    assert 0.7 * used <= measured <= 1.3 * used + 0.1, (measured, used)

    # the Parquet trace is the same span
    trace = pd.read_parquet(client.download_artifacts(short.info.run_id, schema.trace_artifact("top"),
                                                      str(tmp_path)))
    assert trace["time"].min() * 1000 >= start_ms - 1 and trace["time"].max() * 1000 <= end_ms + 1
    assert trace["time"].max() - trace["time"].min() == np.float64(duration) or \
        abs(trace["time"].max() - trace["time"].min() - duration) < 1e-3

    # watching it cost CPU over its own span: its listener took readings for its span only
    samples = m[schema.monitoring_key("top", "samples")]
    assert samples <= duration / 0.1 + 5, samples
    assert long.data.metrics[schema.monitoring_key("top", "samples")] > samples + 15
    cost = m[schema.MONITORING_CPU_PCT]
    spent = m[schema.MONITORING_LISTENERS_CPU] + m[schema.MONITORING_STORE_CPU]
    assert abs(cost - 100 * spent / duration) < 0.01
