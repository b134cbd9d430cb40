"""A SQLite store deleted, replaced or made read-only during a run, or read-only before it (issue 39).

Through the CLI with a real store: the launcher never reports a run as stored that the store
does not hold (its closing lines say where the run is kept and that ``radtrack sync``
stores it), keeps MLflow's tracebacks out of the terminal, and ``radtrack sync`` then stores
the run (re-created, with its true times, status, tags, params and metrics, where the store
lost it). A store that cannot be written before the run is named in one line and nothing
starts. Read-only is made with ``chattr +i`` as root (permission bits do not stop root), with
permission bits otherwise.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from support import radtrack_cli, run_cli

from radtrack.store import newstore

WAIT = Path(__file__).parents[1] / "scripts" / "wait_for_file.py"


def _read_only(path: Path) -> Callable[[], None]:
    """Make ``path`` (a file or a folder) unwritable for this user; returns the undo. Skips
    the test, visibly, where this host cannot."""
    if os.geteuid() == 0:
        p = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"root cannot make {path} read-only here (chattr +i: {p.stderr.strip()})")
        return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    return lambda: path.chmod(mode)


def _launch(tmp_path: Path, db: Path, go: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RADTRACK_HOME": str(tmp_path / ".radtrack"),
           "RADTRACK_STORE_WAIT_S": "2"}
    return subprocess.Popen(
        [sys.executable, "-m", "radtrack", "-e", "lost", "-l", "top", "--interval", "0.2",
         "--tracking-uri", f"sqlite:///{db}", str(WAIT), str(tmp_path / "pid"), str(go)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _await_runs(db: Path, p: subprocess.Popen[str]) -> None:
    """Until the store holds the workload run and the row run (then a second of samples)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and p.poll() is None:
        try:
            with sqlite3.connect(db) as con:
                if con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 2:
                    time.sleep(1.0)
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the runs never appeared in {db}: {p.communicate()}")


def _no_mlflow_noise(stderr: str) -> None:
    assert "Traceback" not in stderr and "ERROR mlflow" not in stderr, stderr[-4000:]


def _synced_row(tmp_path: Path, db: Path) -> tuple[MlflowClient, object, object]:
    # in-process: this process never opened the store, so it holds no connection to the old file
    s = run_cli("sync", cwd=tmp_path, env={"RADTRACK_HOME": str(tmp_path / ".radtrack")})
    assert s.returncode == 0, s.stdout + s.stderr
    assert "1 run(s) stored, 0 left" in s.stdout, s.stdout
    c = MlflowClient(f"sqlite:///{db}")
    exp = c.get_experiment_by_name("lost")
    assert exp is not None
    runs = c.search_runs([exp.experiment_id])
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    parents = [r for r in runs if r.data.tags.get("radtrack.role") == "workload"]
    assert len(rows) == 1 and len(parents) == 1, [r.info.run_name for r in runs]
    return c, rows[0], parents[0]


@pytest.mark.parametrize("fault", ["deleted", "replaced"])
def test_a_store_file_deleted_or_replaced_during_a_run(tmp_path: Path, fault: str) -> None:
    db = tmp_path / "mlflow.db"
    go = tmp_path / "go"
    t0 = time.time()
    p = _launch(tmp_path, db, go)
    _await_runs(db, p)
    if fault == "deleted":
        db.unlink()
    else:
        other = tmp_path / "other.db"
        newstore.create(other)
        os.replace(other, db)
    go.touch()
    out, err = p.communicate(timeout=300)
    t1 = time.time()
    assert p.returncode == 0, err[-4000:]
    assert "released" in out
    _no_mlflow_noise(err)
    said = "was deleted" if fault == "deleted" else "was replaced by another"
    lines = [ln for ln in err.splitlines() if "does not hold the run(s) any more" in ln]
    assert len(lines) == 1 and said in lines[0] and "radtrack sync" in lines[0], err[-4000:]
    closing = [ln for ln in err.splitlines() if "lost-1 A: FINISHED (exit 0, run " in ln]
    assert len(closing) == 1 and "is not in the store" in closing[0], err[-4000:]

    c, row, parent = _synced_row(tmp_path, db)
    assert row.info.status == "FINISHED" and parent.info.status == "FINISHED"
    assert row.info.run_name == "lost-1 A" and row.data.tags["radtrack.exit_code"] == "0"
    assert row.data.params["script"] == str(WAIT)
    # its true times: the script's start and end, not the sync's
    assert t0 * 1000 <= row.info.start_time <= row.info.end_time <= t1 * 1000
    # every spooled sample, once: the history is the stored trace (its points at the span's ends
    # included: store/spans.py)
    frame = pd.read_parquet(c.download_artifacts(row.info.run_id, "telemetry/top.parquet", str(tmp_path)))
    steps = sorted(m.step for m in c.get_metric_history(row.info.run_id, "system/top/mem_used_mib"))
    assert len(frame) >= 5 and steps == frame["step"].tolist()


def test_a_store_made_read_only_during_a_run(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    go = tmp_path / "go"
    p = _launch(tmp_path, db, go)
    _await_runs(db, p)
    undo = _read_only(db)
    try:
        go.touch()
        out, err = p.communicate(timeout=300)
    finally:
        undo()
    assert p.returncode == 0, err[-4000:]
    _no_mlflow_noise(err)
    lines = [ln for ln in err.splitlines() if "radtrack sync" in ln]
    assert len(lines) == 1 and "read-only" in lines[0] and "unreachable" not in lines[0], err[-4000:]
    assert "lost-1 A: FINISHED (exit 0, run " in err and "its end not stored yet" in err, err[-4000:]
    c, row, parent = _synced_row(tmp_path, db)
    assert row.info.status == "FINISHED" and parent.info.status == "FINISHED"
    assert len(c.get_metric_history(row.info.run_id, "system/top/mem_used_mib")) >= 5


@pytest.mark.parametrize("what", ["file", "folder", "new-store-folder"])
def test_a_store_that_cannot_be_written_is_named_before_the_script_starts(
        tmp_path: Path, what: str) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "mlflow.db"
    if what != "new-store-folder":
        newstore.create(db)
    undo = _read_only(db if what == "file" else folder)
    try:
        p = radtrack_cli("-e", "ro", "-l", "none", "--tracking-uri", f"sqlite:///{db}",
                         str(WAIT), str(tmp_path / "pid"), str(tmp_path / "go"), cwd=tmp_path,
                         env={"RADTRACK_HOME": str(tmp_path / ".radtrack")}, timeout=120)
    finally:
        undo()
    assert p.returncode == 2, p.stdout + p.stderr
    assert "waiting for" not in p.stdout  # the script never started
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    expected = {"file": "is read-only", "folder": f"folder {folder} is not writable",
                "new-store-folder": f"folder {folder} is not writable"}[what]
    assert expected in lines[0], lines[0]
