"""Fault: the SQLite store overwritten in place while a sheet's row runs (garbage written
into mlflow.db, or the file emptied; docs/architecture.md "Faults"). The script's exit 0
stays a FINISHED row, in the launcher's exit code and in the sheet; one line names the
store's problem and what to do; once the garbage is moved aside (an emptied file is a store
again as it is), ``radtrack sync`` re-creates the row and its workload run, both FINISHED,
and writes the row's Run cell into the sheet."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from support import cli_here, radtrack_cli

SCRIPT = """import sys, time
time.sleep(1.5)
with open(sys.argv[1], "r+b") as f:  # in place: the same inode, other bytes or none
    f.write(b"garbage!" * 4096) if sys.argv[2] == "garbage" else f.truncate(0)
time.sleep(1.5)
print("script done", flush=True)
"""


@pytest.mark.parametrize(("how", "said_as"), [("garbage", "no SQLite database any more"),
                                             ("emptied", "was emptied (truncated in place)")])
def test_a_store_overwritten_mid_run_keeps_the_scripts_status_and_sync_restores_it(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], how: str, said_as: str) -> None:
    from mlflow import MlflowClient

    db = tmp_path / "mlflow.db"
    (tmp_path / "g.py").write_text(SCRIPT)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params\n"
                     f"garbage,1,,-,g.py,top,{db} {how}\n")
    p = radtrack_cli(str(sheet), env={"RADTRACK_STORE_WAIT_S": "5"}, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out  # the script's exit 0 is no failure
    assert "script done" in out and "could not start" not in out and "FAILED" not in out
    said = [ln for ln in out.splitlines() if said_as in ln]
    assert len(said) == 1 and "radtrack sync" in said[0] and "restore it" in said[0], out
    assert "garbage-1 A: FINISHED (exit 0" in out
    cells = list(csv.reader(sheet.read_text().splitlines()))
    assert cells[1][cells[0].index("Status")] == "FINISHED garbage-1 A"  # what the script did

    if how == "garbage":
        db.rename(tmp_path / "garbage.db")  # the user moves the garbage aside
    done = cli_here(monkeypatch, capsys, "sync")
    assert done.returncode == 0, done.stdout + done.stderr
    client = MlflowClient(store)
    runs = client.search_runs([client.get_experiment_by_name("garbage").experiment_id])
    assert {r.data.tags["radtrack.role"]: r.info.status for r in runs} == {
        "workload": "FINISHED", "row": "FINISHED"}
    row = next(r for r in runs if r.data.tags["radtrack.role"] == "row")
    assert "summary/top/proc/cpu_pct/mean" in row.data.metrics  # its spooled samples stored
    cells = list(csv.reader(sheet.read_text().splitlines()))
    assert cells[1][cells[0].index("Run")] == row.info.run_id


def test_a_store_error_after_the_scripts_ended_is_no_failed_start(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Any error of the store's once the scripts ended (here: its check that the runs are
    still there raises) leaves the rows' status as their scripts ended and their spool for
    sync; it is not labelled a start that failed. In-process launch (support.cli_here)."""
    from radtrack.run import launch

    def broken(rows, recorder) -> bool:
        raise RuntimeError("the store broke after the scripts ended")

    monkeypatch.setattr(launch, "store_lost", broken)
    (tmp_path / "ok.py").write_text("print('ran')\n")
    p = cli_here(monkeypatch, capsys, "-e", "late", "-l", "none", str(tmp_path / "ok.py"))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "could not start" not in out and "FAILED" not in out
    assert "its runs could not be stored: the store broke after the scripts ended" in out
    assert "late-1 A: FINISHED (exit 0" in out and "radtrack sync" in out
