"""``radtrack status`` and ``radtrack cancel`` of a sheet run here (the local executor's
side of the contract, radtrack/executors/local_control.py): a real launcher runs a sheet
into a real SQLite store; status names it and the rows, cancel stops it as Ctrl-C does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import run_cli

SCRIPT = "import time\nprint('started', flush=True)\ntime.sleep(120)\n"


def test_status_and_cancel_of_a_sheet_running_here(tmp_path: Path) -> None:
    (tmp_path / "sleep.py").write_text(SCRIPT)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params\n"
                     "held,1,-,-,sleep.py,none,\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RADTRACK_HOME": str(tmp_path / ".radtrack"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    launcher = subprocess.Popen([sys.executable, "-m", "radtrack", "--wait-end", str(sheet)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    try:
        assert launcher.stdout is not None
        for line in launcher.stdout:  # the script runs: the launcher holds the sheet
            if "started" in line:
                break
        p = run_cli("status", str(sheet))
        assert p.returncode == 1, p.stderr
        assert p.stdout.startswith(f"launcher: pid {launcher.pid} on host ")
        assert "held-1: (not run)" in p.stdout  # its Status is written when it ends
        p = run_cli("cancel", str(sheet))
        assert p.returncode == 0, p.stderr
        assert f"sent SIGINT to the launcher of {sheet} (pid {launcher.pid})" in p.stdout
        rest = launcher.communicate(timeout=60)[0]
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 130, rest  # as Ctrl-C: interrupted
    p = run_cli("status", str(sheet))
    assert p.returncode == 1 and p.stdout.startswith("held-1: KILLED held-1"), p.stdout
    assert "launcher:" not in p.stdout
    p = run_cli("cancel", str(sheet))  # nothing runs it any more
    assert p.returncode == 2 and "nothing of it runs" in p.stderr
