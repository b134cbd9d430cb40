"""A run's summary columns are made of its listeners' series only: a code window's figures
(``window/<name>/gpu_util_pct``, one value each) share roles with them but are never a
reading, so they neither drag a mean nor make a 30-s run look like a one-sample anecdote;
and the run's own GPU memory, read every 5 s by design on a GPU it has to itself, is not
what a sample count judges."""

from __future__ import annotations

import pandas as pd

from radtrack.analysis.run_summaries import sample_count
from radtrack.compute.summary import summarize_series


def test_a_code_windows_figures_are_not_a_device_of_the_run() -> None:
    rows = [{"run_id": "r", "metric": "smi/gpu0/gpu_util_pct", "seconds": float(i), "value": 80.0}
            for i in range(11)]
    rows.append({"run_id": "r", "metric": "window/warmup/gpu_util_pct", "seconds": 1.0, "value": 0.0})
    rows.append({"run_id": "r", "metric": "window/warmup/power_w", "seconds": 1.0, "value": 9999.0})
    table = summarize_series(pd.DataFrame(rows))
    assert table.loc[0, "gpu_util_pct_mean"] == 80.0
    assert "power_w_mean" not in table.columns  # a window's power is not the run's power


def test_the_sample_count_judges_the_series_read_at_the_runs_interval() -> None:
    keys = {"smi/gpu0/power_w", "smi/gpu0/gpu_util_pct", "smi/gpu0/proc_mem_used_mib",
            "window/warmup/gpu_util_pct"}
    stored = {"summary/smi/gpu0/power_w/n": 31.0, "summary/smi/gpu0/gpu_util_pct/n": 153.0,
              "summary/smi/gpu0/proc_mem_used_mib/n": 7.0, "summary/window/warmup/gpu_util_pct/n": 1.0}
    assert sample_count(keys, stored, None) == 31.0
