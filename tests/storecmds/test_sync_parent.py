"""A launcher killed with SIGKILL, then ``radtrack sync``: rows and their workload run closed.

One launch, its spool then left as a kill between creating a run and noting it leaves it
(radtrack/run/record.py: the workload run made, ``create.json`` not yet told; a row's run
made, its folder not yet bound): sync adopts those runs, creates none twice, and ends them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import run_cli

BUSY = Path(__file__).parents[1] / "scripts" / "busy.py"


@pytest.mark.slow
def test_sync_after_sigkill_closes_the_parent_run(store: str, tmp_path: Path) -> None:
    sheet = tmp_path / "pair.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"crash,1,,,,-,{BUSY},top,30\n"
                     f"crash,1,,,,-,{BUSY},top,30\n")
    launcher = subprocess.Popen([sys.executable, "-m", "radtrack", "--interval", "0.2", str(sheet)],
                                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    spool = Path(os.environ["RADTRACK_HOME"]) / "spool"
    deadline = time.monotonic() + 120
    # the scripts start before their runs exist (radtrack/run/record.py): wait for both runs
    while len(list(spool.glob("*/meta.json"))) < 2 or len(list(spool.glob("*/top.jsonl"))) < 2:
        assert time.monotonic() < deadline, "the rows' runs were never created or never spooled"
        time.sleep(0.2)
    time.sleep(2)
    os.killpg(launcher.pid, 9)  # the launcher and its workloads, as an OOM kill or a lost node
    launcher.wait()

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("crash")
    before = c.search_runs([exp.experiment_id])
    assert sorted(r.info.status for r in before) == ["RUNNING"] * 3

    # the kill a moment earlier: both runs existed, the parent's id not yet in either row's
    # create.json, the second row's folder not yet bound to its run
    from radtrack.store import runfiles

    folders = sorted(f.parent for f in spool.glob("*/create.json"))
    assert len(folders) == 2
    for folder in folders:
        runfiles.update(folder, runfiles.CREATE_FILE, parent_id="", parent_name="")
    unbound = folders[1]
    bound_to = runfiles.read(unbound, "meta.json")["run_id"]
    (unbound / "meta.json").unlink()

    p = run_cli("sync")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 run(s) stored" in p.stdout
    assert "adopted workload run" in p.stdout and f"adopted run {bound_to}" in p.stdout, p.stdout
    assert "created workload run" not in p.stdout and ": created run" not in p.stdout, p.stdout  # none twice
    assert len(c.search_runs([exp.experiment_id])) == 3
    runs = c.search_runs([exp.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("radtrack.role") == "workload")
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    assert [r.info.status for r in rows] == ["KILLED", "KILLED"]
    assert parent.info.status == "KILLED"
    assert parent.data.tags["radtrack.stopped_by"] == "launcher_lost"
    assert p.stdout.count("its workload (parent) run was still RUNNING; marked KILLED") == 1
    assert parent.info.run_id in p.stdout
