"""Fault: a sheet edited between its SLURM submission and ``radtrack status`` (docs/architecture.md
"Faults"). The job ledger keeps each row's identity taken at submit (radtrack/sheet/rowmatch.py),
so ``radtrack status`` writes each job's Status, Run and Job cells into the rows that were
submitted wherever the edits moved them, never by their line at submit; a row found nowhere is
named in one line with its job and run, and the others are written all the same. One
submission (--detach) to the real single-node SLURM (tests/slurm_cluster.py), two
``radtrack status`` calls."""

from __future__ import annotations

import shutil
from pathlib import Path

from slurm_cluster import wait_for
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Job\n"


def test_status_finds_the_submitted_rows_in_an_edited_sheet(slurm_cluster, tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "show_env.py", tmp_path / "show_env.py")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(HEADER + "edited,1,,,,-,show_env.py,none,a,\n"
                              "edited,1,,,,-,show_env.py,none,b,\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**slurm_cluster.env, "MLFLOW_TRACKING_URI": uri,
           "RADTRACK_JOB_HOME": str(tmp_path / "jobhome"), "RADTRACK_HOME": str(tmp_path / ".radtrack")}
    p = radtrack_cli(str(sheet), "--executor", "slurm", "--shared-fs", "--detach", env=env)
    assert p.returncode == 0, p.stderr
    lines = sheet.read_text().splitlines()
    job = lines[1].split(",")[-1].split()[0]
    assert lines[1].startswith("edited,1,PENDING edited-1 A,,") and job.isdigit(), lines

    # meanwhile the user adds a comment under the header and a row above the submitted ones,
    # and changes row b's Params: it is no longer the row that was submitted
    sheet.write_text(HEADER + "# added while the job was queued\n"
                     "later,1,,,,-,show_env.py,none,new,\n"
                     + lines[1] + "\n" + lines[2].replace(",b,", ",b2,") + "\n")
    wait_for(lambda: slurm_cluster.state(job) not in ("PENDING", "RUNNING", "COMPLETING", ""),
             120, "the job to end")
    s = radtrack_cli("status", str(sheet), env=env)
    assert s.returncode == 0 and f"edited-1: job {job} COMPLETED" in s.stdout, s.stdout + s.stderr

    from mlflow import MlflowClient

    c = MlflowClient(uri)
    runs = {r.data.tags["radtrack.row"]: r for r in c.search_runs(
        [c.get_experiment_by_name("edited").experiment_id])
        if r.data.tags.get("radtrack.role") == "row"}
    a, b = runs["2"].info.run_id, runs["3"].info.run_id  # tagged with their lines at submit
    text = sheet.read_text().splitlines()
    assert text[:3] == [HEADER.strip(), "# added while the job was queued",
                        "later,1,,,,-,show_env.py,none,new,"], text  # left as the user wrote them
    assert text[3] == f"edited,1,FINISHED edited-1 A,{a},,-,show_env.py,none,a,{job} COMPLETED", text
    assert text[4] == f"edited,1,PENDING edited-1 B,,,-,show_env.py,none,b2,{job} PENDING", text
    lost = [line for line in s.stdout.splitlines() if "no longer in the sheet" in line]
    assert len(lost) == 1 and f"{sheet}:3: row edited-1 B" in lost[0], s.stdout
    assert f"job {job}" in lost[0] and f"Run {b}" in lost[0] and "FINISHED" in lost[0], lost

    # a later refresh writes nothing new and names the lost row no more
    again = radtrack_cli("status", str(sheet), env=env)
    assert again.returncode == 0 and "no longer in the sheet" not in again.stdout, again.stdout
    assert sheet.read_text().splitlines() == text
