"""A SLURM job cancelled before its runs existed (issue 26): its launcher, inside the job,
could not create the runs (the store was away the whole time) when ``scancel`` stopped it.
``radtrack status`` (and the waiting submitter: both refresh through
radtrack/executors/slurm_status.py) creates the runs from the spool the launcher left when
this host sees the job's RADTRACK_HOME, stores the samples and output log, and leaves the
rows KILLED with SLURM's state and reason, as for a job cancelled after its runs existed;
when it does not see that folder, it names it and the sync to run on the node, once. The
workload's end step (code windows, accounting, the script's runs) is run too, through
``radtrack sync``'s own function, once.

Below the CLI (the tests' SLURM takes too long to start for this): a real launch with
``SLURM_JOB_ID`` set, its SQLite store held locked by another writer, stopped with SIGTERM
(what ``scancel`` sends) once its script runs; then the ledger refresh with SLURM's answer
CANCELLED.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import spooled_samples, sqlite_locked

from radtrack.executors.slurm_queue import JobState
from radtrack.executors.slurm_status import Job, Ledger, refresh
from radtrack.store import newstore

SCRIPTS = Path(__file__).parents[1] / "scripts"
JOB = "4711"


@pytest.mark.slow
def test_job_cancelled_before_its_runs_existed(store: str, tmp_path: Path) -> None:
    home = tmp_path / ".radtrack"
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Job\n"
                     f"cancelled,1,,,,-,{SCRIPTS / 'window_then_wait.py'},top,"
                     f"{tmp_path / 'pid'} {tmp_path / 'never'},{JOB} RUNNING\n")
    newstore.prepare(store)  # the store exists (radtrack's template, no migrations); another writer locks it
    with sqlite_locked(tmp_path / "mlflow.db"):
        launcher = subprocess.Popen(
            [sys.executable, "-m", "radtrack", "--interval", "0.2", str(sheet)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "SLURM_JOB_ID": JOB,
                 "RADTRACK_STORE_WAIT_S": "1"})
        spool = home / "spool"
        deadline = time.monotonic() + 120
        # its run asked for, its window closed, a few samples spooled (counted: top.jsonl
        # exists from the listener's hello on, and a loaded host reads late)
        while not (any(spool.glob("*/create.json")) and (tmp_path / "pid").exists()
                   and spooled_samples(spool, "top") >= 3):
            assert launcher.poll() is None and time.monotonic() < deadline, launcher.communicate()
            time.sleep(0.2)
        launcher.send_signal(signal.SIGTERM)  # scancel
        # each store call it makes blocks on the held lock for SQLite's busy timeout, at most
        # RADTRACK_STORE_WAIT_S (1 s here; 20 s before: its end took 37 s after the signal at
        # load 13; store/light_sqlite.py)
        out, err = launcher.communicate(timeout=240)
    assert "cancelled-1 A: KILLED" in err and "its run not created yet" in err, err[-3000:]
    assert not any(spool.glob("*/meta.json"))  # its runs never existed

    ledger = Ledger(sheet, uri=store)
    job = Job(JOB, "cancelled", 1, {"2": "cancelled-1 A"}, home=str(tmp_path / "elsewhere"))
    ledger.add(job)
    lines: list[str] = []
    client = MlflowClient(store)
    refresh(ledger, client, known={JOB: JobState("CANCELLED", "")}, log=lines.append)
    assert any("before its runs existed" in ln and "radtrack sync" in ln for ln in lines), lines
    assert "KILLED" in sheet.read_text()
    lines.clear()
    refresh(ledger, client, known={JOB: JobState("CANCELLED", "")}, log=lines.append)
    assert lines == []  # said once

    job.home = str(home)  # this host sees the job's RADTRACK_HOME (a shared file system)
    refresh(ledger, client, known={JOB: JobState("CANCELLED", "")}, log=lines.append)
    exp = client.get_experiment_by_name("cancelled")
    assert exp is not None, lines
    runs = client.search_runs([exp.experiment_id])
    rows = [r for r in runs if r.data.tags.get("radtrack.role") == "row"]
    parent = [r for r in runs if r.data.tags.get("radtrack.role") == "workload"]
    assert len(rows) == 1 and len(parent) == 1, lines
    row = rows[0]
    assert row.info.status == "KILLED" and parent[0].info.status == "KILLED", lines
    assert row.data.tags["radtrack.slurm.state"] == "CANCELLED"
    assert row.data.tags["radtrack.stopped_by"] == "slurm:CANCELLED"
    assert row.data.tags["radtrack.slurm.job_id"] == JOB
    assert client.get_metric_history(row.info.run_id, "system/top/mem_used_mib")
    assert "logs" in {a.path for a in client.list_artifacts(row.info.run_id)}
    text = sheet.read_text()
    assert f"KILLED cancelled-1 A,{row.info.run_id}," in text and f",{JOB} CANCELLED" in text, text
    assert not any(p.is_dir() for p in spool.iterdir()), lines
    assert job.left == []
    # the launcher's end step, as radtrack sync runs it (radtrack/postrun/synced.py), once
    assert "radtrack.synced_end" in parent[0].data.tags, lines
    assert any(k.startswith("window/warmup/") for k in row.data.metrics), sorted(row.data.metrics)
    assert sum("its workload's end step" in ln for ln in lines) == 1, lines
    lines.clear()
    refresh(ledger, client, known={JOB: JobState("CANCELLED", "")}, log=lines.append)
    assert not any("end step" in ln for ln in lines), lines
