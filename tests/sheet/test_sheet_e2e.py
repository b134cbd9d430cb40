"""End-to-end sheets on CPU through ``python -m radtrack sheet.csv`` and a real SQLite store:
grouping, synchronized start, failure isolation, status write-back, resume, --rerun,
validation and --dry-run."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"

SHEET = """# two co-located rows, then a workload whose first row fails
Experiment, Workload, Status, Run, Devices, Collocation, File,        Listeners, Params
sheety,     1,        ,       ,    ,        -,           busy.py,     top,       2
sheety,     1,        ,       ,    ,        -,           busy.py,     none,      "1.5"
sheety,     2,        ,       ,    ,        -,           exit_code.py, none,     4
sheety,     2,        ,       ,    ,        -,           busy.py,     none,      0.5
sheety,     3,        ,       ,    ,        -,           exit_code.py, none,     0
"""


def _sheet(tmp_path: Path, text: str = SHEET) -> Path:
    for name in ("busy.py", "exit_code.py"):
        shutil.copy(SCRIPTS / name, tmp_path / name)
    path = tmp_path / "sheet.csv"
    path.write_text(text)
    return path


def _runs(uri: str):
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("sheety")
    runs = c.search_runs([exp.experiment_id]) if exp else []
    return c, runs


def _cells(path: Path) -> list[list[str]]:
    import csv

    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return [[c.strip() for c in row] for row in csv.reader(lines)][1:]


def test_sheet_runs_groups_writes_back_and_resumes(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path)
    p = radtrack_cli(str(sheet), timeout=300)
    assert p.returncode == 1, p.stderr  # one row failed
    out = p.stdout
    assert "[A] busy done True" in out and "[B] busy done True" in out  # per-row prefixes
    c, runs = _runs(store)
    parents = {r.data.tags["radtrack.workload"]: r for r in runs if r.data.tags["radtrack.role"] == "workload"}
    rows = {r.info.run_name: r for r in runs if r.data.tags["radtrack.role"] == "row"}
    assert set(parents) == {"1", "2", "3"}
    assert set(rows) == {"sheety-1 A", "sheety-1 B", "sheety-2 A", "sheety-2 B", "sheety-3 A"}
    a, b = rows["sheety-1 A"], rows["sheety-1 B"]
    assert a.data.tags["mlflow.parentRunId"] == b.data.tags["mlflow.parentRunId"] == parents["1"].info.run_id
    assert a.data.tags["radtrack.colocated_with"] == "sheety-1 B"
    assert a.data.tags["radtrack.row"] == "3" and b.data.tags["radtrack.row"] == "4"
    assert a.data.tags["radtrack.sheet"] == str(sheet)
    # released together: the measured skew is small and the two runs overlap in time
    assert float(parents["1"].data.tags["radtrack.start_skew_ms"]) < 1000
    assert abs(a.info.start_time - b.info.start_time) < 5000
    assert "summary/top/proc/cpu_pct/mean" in a.data.metrics
    assert rows["sheety-2 A"].info.status == "FAILED"
    assert rows["sheety-2 B"].info.status == "FINISHED"  # a failing sibling does not stop it
    assert parents["2"].info.status == "FAILED"
    assert rows["sheety-3 A"].info.status == "FINISHED"  # the sheet goes on after a failure
    cells = _cells(sheet)
    assert [r[2] for r in cells] == ["FINISHED sheety-1 A", "FINISHED sheety-1 B", "FAILED sheety-2 A",
                                     "FINISHED sheety-2 B", "FINISHED sheety-3 A"]
    assert [r[3] for r in cells] == [rows[n].info.run_id for n in
                                     ("sheety-1 A", "sheety-1 B", "sheety-2 A", "sheety-2 B", "sheety-3 A")]
    assert sheet.read_text().startswith("# two co-located rows")  # comments and layout kept

    # again: FINISHED workloads skipped, the FAILED one not rerun without --rerun
    p = radtrack_cli(str(sheet), timeout=300)
    assert p.returncode == 0, p.stderr
    assert len(_runs(store)[1]) == len(runs)
    # --rerun: only the FAILED workload runs again (it fails again: exit 4)
    p = radtrack_cli("--rerun", str(sheet), timeout=300)
    assert p.returncode == 1, p.stderr
    again = _runs(store)[1]
    assert len(again) == len(runs) + 3  # one parent + two rows of workload 2
    new_ids = {r.info.run_id for r in again} - {r.info.run_id for r in runs}
    assert {r.data.tags["radtrack.workload"] for r in again if r.info.run_id in new_ids} == {"2"}
    assert _cells(sheet)[2][3] in new_ids


def test_invalid_sheet_reports_every_problem_and_starts_nothing(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, """Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Colour
x,one,,,,-,busy.py,top,1,red
,2,,,,MPS:200,missing.py,smi+bogus,1,blue
""")
    p = radtrack_cli(str(sheet))
    assert p.returncode == 2
    err = p.stderr
    for expected in (f"{sheet}:1: column Colour", f"{sheet}:2: column Workload",
                     f"{sheet}:3: column Experiment", f"{sheet}:3: column Collocation",
                     f"{sheet}:3: column File", f"{sheet}:3: column Listeners"):
        assert expected in err, (expected, err)
    assert not Path("mlflow.db").exists() and not Path(".radtrack").exists()


def test_dry_run_prints_the_plan_and_records_nothing(store: str, tmp_path: Path) -> None:
    sheet = _sheet(tmp_path)
    before = sheet.read_text()
    p = radtrack_cli("--dry-run", str(sheet))
    assert p.returncode == 0, p.stderr
    assert "sheety-1" in p.stdout and "sheety-3" in p.stdout and "busy.py" in p.stdout
    assert sheet.read_text() == before
    assert not Path("mlflow.db").exists()
