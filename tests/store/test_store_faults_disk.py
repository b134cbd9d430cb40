"""The spool's disk fills up mid-run (issue 26): a size-limited tmpfs as $RADTRACK_HOME.

The launcher says so once, the script runs on and its row keeps its true status, the samples
that could not be written are counted (tag and metric, with when), spooling resumes when space
returns, and every sample written before, during and after is stored once. Needs root to mount
the tmpfs; skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs mounted in tmp_path."""
    if os.geteuid() != 0:
        pytest.skip("full disk: mounting a size-limited tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"full disk: could not mount a tmpfs: {r.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_spool_disk_drops_counted_samples_and_resumes(store: str, small_disk: Path,
                                                              tmp_path: Path) -> None:
    p = radtrack_cli("-e", "full", "-l", "top", "--interval", "0.1",
                     str(SCRIPTS / "fill_disk.py"), str(small_disk), "3", "3",
                     env={"RADTRACK_HOME": str(small_disk / ".radtrack")}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("disk is full") == 1, p.stderr
    full = float(re.search(r"full at ([\d.]+)", p.stdout).group(1))
    freed = float(re.search(r"freed at ([\d.]+)", p.stdout).group(1))
    c = MlflowClient(store)
    exp = c.get_experiment_by_name("full")
    row = next(r for r in c.search_runs([exp.experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    rid = row.info.run_id
    assert row.info.status == "FINISHED" and row.data.tags["radtrack.exit_code"] == "0"
    dropped = int(row.data.tags["radtrack.spool.dropped"].split()[0])
    assert dropped >= 5, row.data.tags["radtrack.spool.dropped"]  # ~3 s at 10 Hz
    history = sorted(c.get_metric_history(rid, "radtrack/spool_dropped_samples"), key=lambda m: m.step)
    assert history and history[-1].value == dropped
    assert all(full - 1 <= m.timestamp / 1000 <= freed + 1 for m in history)  # when they were
    frame = pd.read_parquet(c.download_artifacts(rid, "telemetry/top.parquet", str(tmp_path)))
    steps = sorted(m.step for m in c.get_metric_history(rid, "system/top/mem_used_mib"))
    assert steps == frame["step"].tolist()  # every sample spooled is stored, once
    assert (frame["time"] < full).sum() >= 5  # before the disk filled
    assert (frame["time"] > freed + 0.5).sum() >= 5  # spooling resumed
