"""Analysis on runs recorded by the real launcher (CPU listener `top`, no GPU needed)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support import radtrack_cli

from radtrack.analysis import load_runs, load_series, summarize_runs, time_to_target
from radtrack.analysis.report import analyze_experiment
from radtrack.compute.interference import interference
from radtrack.compute.variability import variability

SCRIPT = """\
import argparse, time
from radtrack.script.benchmark import RADTBenchmark

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()
with RADTBenchmark() as run:
    for step in range(args.steps):
        t0, n = time.time(), 0
        while time.time() - t0 < 0.3:
            n += 1
        run.log_metric("throughput_samples_per_s", n / (time.time() - t0), step=step)
        run.log_metric("val_acc", 0.5 + 0.1 * step, step=step)
"""

SHEET = """\
Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval
real,1,,,,-,work.py,top,--steps 4,0.2
real,2,,,,-,work.py,top,--steps 4,0.2
real,3,,,,-,work.py,top,--steps 4,0.2
real,3,,,,-,work.py,top,--steps 4,0.2
"""


@pytest.mark.slow
def test_analysis_of_launcher_runs(store: str, tmp_path: Path):
    (tmp_path / "work.py").write_text(SCRIPT)
    (tmp_path / "sheet.csv").write_text(SHEET)
    proc = radtrack_cli("sheet.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    runs = load_runs("real")
    assert len(runs) == 4 and set(runs["status"]) == {"FINISHED"}
    assert sorted(runs["workload"]) == [1, 2, 3, 3]
    assert (runs["param.steps"] == "4").all()
    assert runs["file"].str.endswith("work.py").all()
    assert (runs["duration_s"] > 1.2).all()

    ids = list(runs["run_id"])
    series = load_series(ids, metrics=["top/cpu_pct", "top/proc/rss_mib",
                                       "throughput_samples_per_s", "val_acc"])
    counts = series.groupby(["run_id", "metric"]).size()
    cpu = series[series["metric"] == "top/cpu_pct"]
    for run_id in ids:
        assert counts[(run_id, "throughput_samples_per_s")] == 4
        # top starts once the script runs (on purpose), so how many of its readings fall in
        # the script's 1.2 s depends on how late it came on a loaded host (4 were seen); its
        # pace and its reach do not: after its first reading (at the run's start here),
        # the row's 0.2-s Interval (top's own default is 1 s), up to the script's last step
        t = np.sort(cpu.loc[cpu["run_id"] == run_id, "seconds"].to_numpy(float))
        last_step = series.loc[(series["run_id"] == run_id)
                               & (series["metric"] == "throughput_samples_per_s"), "seconds"].max()
        assert len(t) >= 3, t
        assert 0.05 <= float(np.median(np.diff(t[1:]))) <= 0.45, t
        assert t[-1] >= last_step - 0.5, (t, last_step)
    assert cpu["seconds"].between(-1.0, 120.0).all()

    summary = summarize_runs(runs).set_index("run_id")
    assert (summary["throughput_samples_per_s_mean"] > 0).all()
    assert (summary["rss_mib_max"] > 5).all()  # a Python process holds several MiB
    assert summary["cpu_pct_mean"].between(0, 100).all()
    assert summary["energy_j"].isna().all()  # no GPU and no energy counter: unknown, not 0

    reached = time_to_target(series, "val_acc", 0.7).set_index("run_id")
    assert (reached["step"] == 2).all()

    inter = interference(runs, summary.reset_index()).set_index("run_id")
    solo_ids = set(runs.loc[runs["workload"] < 3, "run_id"])
    assert len(inter) == 2
    for _, row in inter.iterrows():
        assert set(row["solo_run_ids"].split(",")) == solo_ids
        assert row["slowdown_basis"] == "throughput_samples_per_s"
        assert math.isfinite(row["slowdown"]) and row["slowdown"] > 0

    var = variability(runs, summary.reset_index()).set_index("rows_in_workload")
    assert list(var["n"].sort_index()) == [2, 2]
    assert np.isfinite(var.loc[1, "duration_s_cv"])

    report = analyze_experiment("real", target=("val_acc", 0.7))
    assert (report.runs["time_to_target_step"] == 2).all()
