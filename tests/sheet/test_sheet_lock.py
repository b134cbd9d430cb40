"""One launcher per sheet (radtrack/sheet/lock.py), through the real CLI: a second launcher
is refused naming the holder, the lock goes with the launcher, a stale one is taken over."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from support import radtrack_cli

from radtrack.sheet.lock import acquire, lock_path, release

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Devices,Collocation,File,Listeners,Params"


def _sheet(tmp_path: Path, rows: str) -> Path:
    for name in ("busy.py", "exit_code.py"):
        shutil.copy(SCRIPTS / name, tmp_path / name)
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"{HEADER}\n{rows}")
    return sheet


def _row_runs(uri: str, experiment: str) -> int:
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    runs = c.search_runs([exp.experiment_id]) if exp else []
    return sum(r.data.tags.get("radtrack.role") == "row" for r in runs)


def test_a_second_launcher_is_refused_naming_the_holder(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, "lk,1,,-,busy.py,none,6\nlk,2,,-,exit_code.py,none,0\n")
    first = subprocess.Popen([sys.executable, "-m", "radtrack", str(sheet)], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not lock_path(sheet).exists() or not lock_path(sheet).read_text():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.1)
        second = radtrack_cli(str(sheet), cwd=tmp_path)
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert line.startswith(f"radtrack: error: {sheet} is being run by pid {first.pid} on "
                               f"host {socket.gethostname()} (since "), line
        assert line.endswith(f"one launcher runs a sheet at a time; wait for it to end or "
                             f"stop it (its lock: {sheet}.lock)")
        # the SLURM submitter takes the same lock
        slurm = radtrack_cli("--executor", "slurm", "--shared-fs", str(sheet), cwd=tmp_path)
        assert slurm.returncode == 2 and f"is being run by pid {first.pid}" in slurm.stderr
    finally:
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert not lock_path(sheet).exists()  # removed on the way out
    assert _row_runs(store, "lk") == 2  # each row once, not twice
    # the lock was released: the sheet can be run again (every row FINISHED, skipped)
    again = radtrack_cli(str(sheet), cwd=tmp_path)
    assert again.returncode == 0 and "FINISHED, skipped" in again.stderr, again.stderr


def test_a_stale_lock_is_taken_over(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, "st,1,,-,exit_code.py,none,0\n")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs
    lock_path(sheet).write_text(f"pid={gone.pid}\nhost={socket.gethostname()}\n"
                                "since=2026-01-01T00:00:00+0000\n")
    p = radtrack_cli(str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (f"a stale lock of pid {gone.pid} on {socket.gethostname()} (since "
            "2026-01-01T00:00:00+0000), which no longer runs, is taken over") in p.stderr
    assert not lock_path(sheet).exists()
    assert _row_runs(store, "st") == 1


def test_the_lock_goes_with_a_killed_launcher(store: str, tmp_path: Path) -> None:
    """The kernel drops a flock when its holder dies, even by SIGKILL."""
    sheet = _sheet(tmp_path, "kl,1,,-,exit_code.py,none,0\n")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path\n"
        "from radtrack.sheet.lock import acquire\n"
        f"acquire(Path({str(sheet)!r})); print('held', flush=True); time.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    held = radtrack_cli(str(sheet), cwd=tmp_path)
    assert held.returncode == 2 and f"is being run by pid {holder.pid}" in held.stderr
    holder.kill()
    holder.wait()
    p = radtrack_cli(str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"a stale lock of pid {holder.pid}" in p.stderr


def test_dry_run_and_refused_sheets_leave_no_lock(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, "dr,1,,-,exit_code.py,none,0\n")
    fd = acquire(sheet)
    try:  # a dry run only reads: it is not refused by a running launcher
        assert radtrack_cli("--dry-run", str(sheet), cwd=tmp_path).returncode == 0
    finally:
        release(sheet, fd)
    assert not lock_path(sheet).exists()
    sheet.write_text(f"{HEADER}\ndr,x,,-,exit_code.py,none,0\n")
    bad = radtrack_cli(str(sheet), cwd=tmp_path)
    assert bad.returncode == 2 and "column Workload" in bad.stderr
    assert not lock_path(sheet).exists()
    assert os.listdir(tmp_path).count("s.csv.lock") == 0
