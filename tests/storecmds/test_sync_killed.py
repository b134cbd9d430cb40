"""Fault: ``radtrack sync`` SIGKILLed part way (docs/architecture.md "Faults"), three times
at different moments, then run to its end. A launch against a tracking server that is not
there spools two workloads of two rows each; each sync stores into a SQLite store. Whatever
the killed syncs had done, the last one leaves every run once (one workload run per
workload, one run per row: none made twice), each FINISHED with every spooled reading
stored once, the sheet's Run cells filled, and nothing left in the spool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from servers import free_port
from support import radtrack_cli

SCRIPT = "import sys, time\ntime.sleep(float(sys.argv[1]))\nprint('script done', flush=True)\n"


def test_sync_killed_three_times_then_run_to_its_end_stores_each_run_once(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    home = tmp_path / ".radtrack"
    env = {"RADTRACK_HOME": str(home), "RADTRACK_STORE_WAIT_S": "1"}
    (tmp_path / "s.py").write_text(SCRIPT)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
                     + "".join(f"killed,{w},,,,-,s.py,top,1.5,0.2\n" for w in (1, 1, 2, 2)))
    away = f"http://127.0.0.1:{free_port()}"  # nothing listens there: everything spools
    p = radtrack_cli("--tracking-uri", away, str(sheet), cwd=tmp_path, env=env, timeout=300)
    assert p.stdout.count("script done") == 4, p.stdout + p.stderr
    assert len(list(home.glob("spool/*/create.json"))) == 4

    store = f"sqlite:///{tmp_path / 'synced.db'}"
    sync = [sys.executable, "-m", "radtrack", "sync", "--tracking-uri", store]
    for delay in (1.5, 3.0, 4.5):  # mid-import, mid-creation, mid-storing (on a 2-core VM)
        proc = subprocess.Popen(sync, cwd=tmp_path, env={**os.environ, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            proc.wait(delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        time.sleep(0.1)
    done = radtrack_cli("sync", "--tracking-uri", store, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(home.glob("spool/*/create.json")), done.stdout  # nothing left behind

    c = MlflowClient(store)
    runs = c.search_runs([c.get_experiment_by_name("killed").experiment_id])
    names = Counter(r.info.run_name for r in runs)
    assert names == Counter({"killed-1": 1, "killed-1 A": 1, "killed-1 B": 1,
                             "killed-2": 1, "killed-2 A": 1, "killed-2 B": 1}), names
    assert {r.info.status for r in runs} == {"FINISHED"}
    for r in runs:
        if r.data.tags.get("radtrack.role") != "row":
            continue
        points = [(m.timestamp, m.step) for m in c.get_metric_history(r.info.run_id, "system/top/cpu_pct")]
        assert len(points) == len(set(points)) and len(points) >= 3, (r.info.run_name, points)
    cells = [line.split(",") for line in sheet.read_text().splitlines()[1:]]
    assert {cell[3] for cell in cells} == {r.info.run_id for r in runs
                                         if r.data.tags.get("radtrack.role") == "row"}
