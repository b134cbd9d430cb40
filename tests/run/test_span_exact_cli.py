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

from radtrack.vocab import schema

# burns CPU for N seconds, logging (wall clock, CPU seconds used) every 10 ms: the truth the
# run's process CPU series is compared with over any window of it
SCRIPT = """\
import sys, time
end = time.time() + float(sys.argv[1])
log, x, last = [], 0, 0.0
while (now := time.time()) < end:
    x += 1
    if now - last >= 0.01:
        log.append(f"{now!r} {time.process_time()!r}")
        last = now
log.append(f"{time.time()!r} {time.process_time()!r}")
open(sys.argv[2], "w").write("\\n".join(log))
"""
SHORT_S, LONG_S = 2.0, 4.5  # the short one: at least 3 readings after a late first
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

    # its process CPU is the script's own, compared over the window its readings measured (the
    # first reading in the span to the last): outside it, the span's end points hold the
    # nearest reading (radtrack/store/spans.py), and on a loaded host the first reading comes
    # 0.7-1.5 s after the start and the supervisor notices the exit 0.3 s or more after it:
    # the held ends then carry whatever rate their reading had (issue 47: 1.15 CPU-s
    # measured for the script's 0.75 when this compared mean x duration, held ends included,
    # with the script's whole CPU time; 0.51 for 0.41 reproduced at load 10)
    truth = np.loadtxt(tmp_path / "short.cpu")  # (wall clock, CPU seconds) every 10 ms
    pts = _points(db, short.info.run_id, "system/" + PROC_CPU).iloc[1:-1]  # the readings
    t, pct = pts["timestamp"].to_numpy() / 1000, pts["value"].to_numpy()
    assert len(t) >= 3, t - start_ms / 1000
    # each reading is the CPU % since the previous one, stamped at its end: the rectangles
    # after the first reading add up to the CPU seconds of the window
    measured = float(np.sum(pct[1:] * np.diff(t)) / 100)
    used = float(np.diff(np.interp([t[0], t[-1]], truth[:, 0], truth[:, 1]))[0])
    assert 0.85 * used - 0.05 <= measured <= 1.15 * used + 0.05, (measured, used)

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
