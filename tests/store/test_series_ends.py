"""No false zeros (issue 52): a run's process series end with the process's last real
reading. top reads nothing of a tree whose processes have exited (radtrack/listeners/top.py), so the
span's end point (radtrack/store/spans.py) holds the last reading instead of being
interpolated toward a 0 read after the exit; through a real launch into a real store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support import radtrack_cli

# holds ~64 MiB to its very end (os._exit: no teardown frees it first), so a collapse at the
# end cannot hide in the noise
SCRIPT = ("import os, time\nblock = bytearray(64 * 2**20)\ntime.sleep(1.5)\nprint(len(block), flush=True)\n"
          "os._exit(0)\n")
PROC_GAUGES = ("rss_mib", "threads_count", "procs_count")


def test_no_process_series_ends_in_a_reading_taken_after_exit(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "hold.py").write_text(SCRIPT)
    p = radtrack_cli("-l", "top", "--interval", "0.1", "hold.py", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(tmp_path / ".radtrack")})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("Default")
    run = next(r for r in client.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    keys = [k for k in run.data.metrics if k.startswith("system/top/proc/")]
    assert {f"system/top/proc/{g}" for g in PROC_GAUGES} <= set(keys), keys
    for key in keys:
        points = sorted(client.get_metric_history(run.info.run_id, key), key=lambda m: (m.timestamp, m.step))
        values = [m.value for m in points]
        if key.rsplit("/", 1)[1] in PROC_GAUGES:  # read every interval (the rates: once a second)
            assert len(values) >= 5, (key, values)
            # the span's end point holds the last real reading: no step toward a 0 after exit
            assert values[-1] == values[-2], (key, values[-4:])
            assert min(values) > 0, (key, values)
    rss = [m.value for m in client.get_metric_history(run.info.run_id, "system/top/proc/rss_mib")]
    assert rss[-1] > 64, rss  # the 64-MiB block is held to the end, and so is the series
    procs = {m.value for m in client.get_metric_history(run.info.run_id, "system/top/proc/procs_count")}
    assert procs == {1.0}, procs
    # the full-resolution trace holds no reading of the tree with the tree gone either
    trace = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/top.parquet"))
    tree = trace[[c for c in trace.columns if c.startswith("top/proc/")]].dropna(how="all")
    assert (tree["top/proc/procs_count"].dropna() == 1).all()
