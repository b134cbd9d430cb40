"""The detached end (radtrack/run/front.py, detach.py, background_launchers.py), through the real CLI: the
shell gets its prompt back once the launch is durable, the runs are stored in the
background, readers wait for them, and ``radtrack sync`` finishes a killed background end."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import radtrack_cli, run_cli

from radtrack.run.background_launchers import running

SCRIPT = """\
import sys, time
time.sleep(float(sys.argv[1]))
print("done", flush=True)
sys.exit(int(sys.argv[2]))
"""
LINE = re.compile(r"storing the run\(s\) in the background \(pid (\d+), log (\S+)\)")


def _home() -> Path:
    return Path(os.environ["RADTRACK_HOME"])


def _await_finishers(timeout: float = 120) -> None:
    """Until no background end of $RADTRACK_HOME holds its pid file's lock."""
    deadline = time.monotonic() + timeout
    while running(_home()):
        assert time.monotonic() < deadline, "the background end never finished"
        time.sleep(0.05)


def _runs(uri: str, experiment: str) -> tuple:
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    runs = c.search_runs([exp.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("radtrack.role") == "workload")
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    return c, parent, rows


@pytest.mark.parametrize(("code", "status", "rc"), [(0, "FINISHED", 0), (3, "FAILED", 1)])
def test_detach_end_returns_then_stores_in_background(store: str, tmp_path: Path, code: int,
                                                      status: str, rc: int) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    p = radtrack_cli("--detach-end", "-e", "bg", "-l", "top", "--interval", "0.1",
                     str(script), "0.5", str(code))
    assert p.returncode == rc, p.stderr[-3000:]  # what a waiting launch returns too
    m = LINE.search(p.stderr)
    assert m, p.stderr[-3000:]
    assert "done" in p.stdout
    # readers wait for the background end before they read: report shows the run complete
    rep = run_cli("report", "bg")  # in-process: the wait is the reader's, not its process's
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert "bg-1 A" in rep.stdout
    _await_finishers()
    assert not running(_home()) and not list((_home() / "finishers").glob("*.json"))
    c, parent, rows = _runs(store, "bg")
    assert [r.info.status for r in rows] == [status] and parent.info.status == status
    row = rows[0]
    assert row.data.tags["radtrack.exit_code"] == str(code)
    arts = {a.path for a in c.list_artifacts(row.info.run_id, "telemetry")}
    assert "telemetry/top.parquet" in arts
    assert any(k.startswith("summary/") for k in row.data.metrics)
    assert not any((_home() / "spool").iterdir())  # everything stored: no spool left
    log = Path(m.group(2)).read_text()
    assert f"bg-1 A: {status} (exit {code}, run {row.info.run_id})" in log


def test_a_terminal_gets_the_detached_end_by_default(store: str, tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "radtrack", "-e", "tty", "-l", "none",
                             str(script), "0.2", "0"],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    os.close(slave)
    out = b""
    while True:  # the terminal's side, until the front and everything holding it closed it
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: no process holds the terminal any more
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")[-3000:]
    text = out.decode(errors="replace")
    assert "done" in text and LINE.search(text), text[-3000:]
    _await_finishers()
    _, parent, rows = _runs(store, "tty")
    assert [r.info.status for r in rows] == ["FINISHED"] and parent.info.status == "FINISHED"


def test_killed_background_end_is_finished_by_sync(store: str, tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    p = radtrack_cli("--detach-end", "-e", "lost", "-l", "top", "--interval", "0.1",
                     str(script), "1", "3")
    assert p.returncode == 1, p.stderr[-3000:]
    pid = int(LINE.search(p.stderr).group(1))
    os.kill(pid, signal.SIGKILL)  # right after the detach
    _await_finishers(30)  # its lock goes with it
    spools = [d for d in (_home() / "spool").iterdir() if d.is_dir()]
    samples = None
    if spools:  # (else it had stored everything before the kill)
        (folder,) = spools
        finish = json.loads((folder / "finish.json").read_text())
        assert (finish["status"], finish["exit_code"]) == ("FAILED", 3)
        lines = [json.loads(x) for x in (folder / "top.jsonl").read_text().splitlines()]
        samples = [x for x in lines if x.get("type") == "sample"]
        assert samples
        s = run_cli("sync")  # in-process
        assert s.returncode == 0, s.stdout + s.stderr
        assert "1 run(s) stored" in s.stdout
    c, parent, rows = _runs(store, "lost")
    assert [r.info.status for r in rows] == ["FAILED"] and parent.info.status == "FAILED"
    row = rows[0]
    assert row.data.tags["radtrack.exit_code"] == "3"
    assert "radtrack.stopped_by" not in row.data.tags  # its true end, not launcher_lost
    if samples is not None:
        # every sample in the run's span once, and the span's two end points
        # (radtrack/store/spans.py); the listener's final reading after the end is not the run's
        key = next(iter(samples[-1]["v"]))
        history = c.get_metric_history(row.info.run_id, "system/" + key)
        start, end = float(f"{finish['start']:.6f}"), finish["end"]
        assert len(history) == sum(1 for x in samples if key in x["v"] and start <= x["t"] <= end) + 2
    assert "telemetry/top.parquet" in {a.path for a in c.list_artifacts(row.info.run_id, "telemetry")}


def test_sheet_is_written_back_by_the_background_end(store: str, tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    sheet = tmp_path / "s.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"sh,1,,,,-,{script},none,0.2 0\n")
    p = radtrack_cli("--detach-end", str(sheet))
    assert p.returncode == 0, p.stderr[-3000:]
    assert LINE.search(p.stderr), p.stderr[-3000:]
    # the sheet's lock is held until the background end wrote the sheet back
    lock = Path(str(sheet) + ".lock")
    if lock.exists():
        fd = os.open(lock, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            again = radtrack_cli(str(sheet))  # a second launcher on the sheet: refused
            assert again.returncode == 2 and "one launcher runs a sheet at a time" in again.stderr
        else:
            assert "FINISHED" in sheet.read_text()
        finally:
            os.close(fd)
    # sync right away waits for the background end, then finds nothing left to do
    sync = run_cli("sync")  # in-process
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert "0 run(s) stored, 0 left" in sync.stdout or "nothing to do" in sync.stdout
    assert not running(_home())
    _, _, rows = _runs(store, "sh")
    (row,) = rows
    assert f"FINISHED sh-1 A,{row.info.run_id}" in sheet.read_text()
    assert not lock.exists()


def test_where_the_end_is_not_detached(store: str, tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    # inside a SLURM job the job's end would kill the background end: it waits, and says so
    p = radtrack_cli("--detach-end", "-e", "inslurm", "-l", "none", str(script), "0", "0",
                     env={"SLURM_JOB_ID": "4242"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert "waiting for the end all the same: inside a SLURM job" in p.stderr
    assert not LINE.search(p.stderr) and not (_home() / "finishers").exists()
    _, parent, rows = _runs(store, "inslurm")  # stored before it returned
    assert [r.info.status for r in rows] == ["FINISHED"] and parent.info.status == "FINISHED"
    bad = radtrack_cli("-l", "none", str(script), "0", "0", env={"RADTRACK_END": "later"})
    assert bad.returncode == 2 and "$RADTRACK_END: expected wait or detach" in bad.stderr
    both = radtrack_cli("--detach-end", "--wait-end", str(script), "0", "0")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_next_launch_takes_the_next_workload_number(store: str, tmp_path: Path) -> None:
    """A CLI launch right after a detached one into a new store: its runs are made once the
    earlier launch's background end is done (MLflow's table creation never runs twice at
    once; the workload number is never taken twice)."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    for _ in range(2):
        p = radtrack_cli("--detach-end", "-e", "seq", "-l", "none", str(script), "0", "0")
        assert p.returncode == 0 and LINE.search(p.stderr), p.stderr[-3000:]
    _await_finishers()
    c = MlflowClient(store)
    runs = c.search_runs([c.get_experiment_by_name("seq").experiment_id])
    parents = sorted(r.data.tags["radtrack.workload"] for r in runs
                     if r.data.tags.get("radtrack.role") == "workload")
    logs = "\n".join(p.read_text() for p in (_home() / "runs").glob("*/end.log"))
    assert parents == ["1", "2"], ([(r.info.run_name, r.data.tags) for r in runs], logs)
