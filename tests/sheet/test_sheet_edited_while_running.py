"""Fault: the sheet is edited while it runs (docs/architecture.md "Faults"). Workload 1's
script edits the sheet as a user in an editor would: a comment under the header, a new row
above the running ones, workload 3 moved above workload 2, one of workload 2's rows deleted.
Statuses and run ids land in the rows that ran; the deleted row is named in one line with its
run (in the store); the launch goes on and exits 0; a resume skips exactly what ran."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from support import cli_here, radtrack_cli

HEADER = "Experiment, Workload, Status, Run, Devices, Collocation, File, Listeners, Params"
ROWS = {
    "w1": "edits,      1,        ,       ,    ,        -,           edit.py,     none,      {sheet}",
    "w2a": "edits,      2,        ,       ,    ,        -,           ok.py,       none,      2a",
    "w2b": "edits,      2,        ,       ,    ,        -,           ok.py,       none,      2b",
    "w3": "edits,      3,        ,       ,    ,        -,           ok.py,       none,      3",
}
# the new row the user adds above while workload 1 runs: the next launch runs it
NEW = "edits,      4,        ,       ,    ,        -,           ok.py,       none,      4"

EDIT = f'''import sys
from pathlib import Path

sheet = Path(sys.argv[1])
lines = sheet.read_text().splitlines(keepends=True)
header, rows = lines[0], lines[1:]
w1, w2a, w2b, w3 = rows
# a comment under the header, a new row above the running ones, workload 3 moved above
# workload 2, and workload 2's second row deleted
sheet.write_text(header + "# added while it ran\\n" + {NEW!r} + "\\n" + w1 + w3 + w2a)
print("edited", flush=True)
'''


def _cells(path: Path) -> dict[str, list[str]]:
    """Params cell -> the row's cells, stripped."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    return {row[8]: row for row in ([c.strip() for c in r] for r in csv.reader(lines[1:]))}


def test_statuses_land_in_the_rows_that_ran_whatever_the_edits(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    (tmp_path / "edit.py").write_text(EDIT)
    (tmp_path / "ok.py").write_text("import sys\nprint('row', sys.argv[1])\n")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("\n".join([HEADER, *ROWS.values()]).format(sheet=sheet) + "\n")

    p = radtrack_cli(str(sheet), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr  # the edits stop nothing
    out = p.stdout + p.stderr
    assert "edited" in out and "row 3" in out and "row 2a" in out and "row 2b" in out
    runs = {r.info.run_name: r for r in MlflowClient(store).search_runs(
        [MlflowClient(store).get_experiment_by_name("edits").experiment_id])
        if r.data.tags.get("radtrack.role") == "row"}
    assert {n: r.info.status for n, r in runs.items()} == {
        "edits-1 A": "FINISHED", "edits-2 A": "FINISHED", "edits-2 B": "FINISHED",
        "edits-3 A": "FINISHED"}
    # the deleted row: one line naming the sheet, the row and its run; the run is stored
    lost = [ln for ln in out.splitlines() if "no longer in the sheet" in ln]
    assert len(lost) == 1, out
    assert f"{sheet}:4: row edits-2 B" in lost[0] and runs["edits-2 B"].info.run_id in lost[0]

    cells = _cells(sheet)
    assert set(cells) == {str(sheet), "4", "3", "2a"}
    for params, name in ((str(sheet), "edits-1 A"), ("3", "edits-3 A"), ("2a", "edits-2 A")):
        assert cells[params][2] == f"FINISHED {name}", (params, cells[params])
        assert cells[params][3] == runs[name].info.run_id
    assert cells["4"][2:4] == ["", ""]  # the row added above is left as the user wrote it
    text = sheet.read_text()
    assert text.splitlines()[1] == "# added while it ran" and NEW in text

    # resume: the rows that ran are skipped, the new one runs
    p = radtrack_cli(str(sheet), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout + p.stderr
    for w in (1, 2, 3):
        assert f"workload edits-{w}: all" in out and "FINISHED, skipped" in out, out
    assert "row 4" in out and "row 3" not in out and "row 2a" not in out and "edited" not in out
    cells = _cells(sheet)
    assert cells["4"][2] == "FINISHED edits-4 A" and cells["3"][2] == "FINISHED edits-3 A"


def test_a_sheet_deleted_while_it_runs_stops_nothing(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The sheet removed by its own row's script: the launch ends as the script did (exit
    0), one line says the Status and Run were not written and names the run; the run is in
    the store. In-process launch (support.cli_here)."""
    from mlflow import MlflowClient

    sheet = tmp_path / "gone.csv"
    (tmp_path / "rm.py").write_text(f"import os\nos.remove({str(sheet)!r})\n")
    sheet.write_text("Experiment,Workload,Devices,Collocation,File,Listeners,Params\n"
                     "gone,1,,-,rm.py,none,\n")
    p = cli_here(monkeypatch, capsys, str(sheet))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    c = MlflowClient(store)
    (run,) = [r for r in c.search_runs([c.get_experiment_by_name("gone").experiment_id])
              if r.data.tags.get("radtrack.role") == "row"]
    said = [ln for ln in out.splitlines() if "Status and Run not written" in ln]
    assert len(said) == 1 and str(sheet) in said[0] and run.info.run_id in said[0], out
    assert run.info.status == "FINISHED" and "Traceback" not in out


def test_rows_alike_keep_their_order_and_an_edited_row_is_lost(tmp_path: Path) -> None:
    """rowmatch.locate through write_statuses: two identical rows shifted by a row inserted
    above get their own statuses in order; a row whose cells were edited is reported lost and
    left as it is; a row re-padded (blanks only) is still found."""
    from radtrack.sheet import read_records
    from radtrack.sheet.rowmatch import WRITTEN, row_key
    from radtrack.sheet.writeback import write_statuses

    head = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"
    rows = ["e,1,,,,-,a.py,none,x", "e,1,,,,-,a.py,none,x", "e,2,,,,-,b.py,none,y",
            "e,3,,,,-,c.py,none,z"]
    records = read_records("\n".join([head, *rows]) + "\n")
    skip = [records[0].cells.index(c) for c in WRITTEN if c in records[0].cells]
    ids = {r.line: (row_key(skip, r.cells), "") for r in records[1:]}
    sheet = tmp_path / "s.csv"
    sheet.write_text("\n".join([head, "e,9,,,,-,new.py,none,n", rows[0], rows[1],
                                "e,2,,,,-,b.py,none,EDITED", "e, 3 ,,,, -,c.py,none,z"]) + "\n")
    lost = write_statuses(sheet, {2: ("FINISHED e-1 A", "r1"), 3: ("FINISHED e-1 B", "r2"),
                                  4: ("FAILED e-2 A", "r3"), 5: ("FINISHED e-3 A", "r4")},
                          identities=ids)
    assert lost == [4]
    lines = sheet.read_text().splitlines()
    assert lines[1] == "e,9,,,,-,new.py,none,n" and lines[4] == "e,2,,,,-,b.py,none,EDITED"
    assert lines[2] == "e,1,FINISHED e-1 A,r1,,-,a.py,none,x"
    assert lines[3] == "e,1,FINISHED e-1 B,r2,,-,a.py,none,x"
    assert lines[5].startswith("e, 3 ,FINISHED e-3 A,r4,")


def test_a_copy_pasted_beside_a_row_does_not_take_its_status(tmp_path: Path) -> None:
    """A copy of a row that is still to run pasted above it (its neighbours as read stay
    beside the row, not the copy), and a copy of the last row appended after it (the sheet's
    end is no evidence): each status lands in the row that ran; the copies stay blank for
    the next launch."""
    from radtrack.sheet import read_records
    from radtrack.sheet.rowmatch import WRITTEN, row_key, with_neighbours
    from radtrack.sheet.writeback import write_statuses

    head = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"
    rows = ["e,1,,,,-,a.py,none,x", "e,2,,,,-,a.py,none,x", "e,3,,,,-,a.py,none,x",
            "e,4,,,,-,a.py,none,x"]
    records = read_records("\n".join([head, *rows]) + "\n")
    skip = [records[0].cells.index(c) for c in WRITTEN if c in records[0].cells]
    keys = with_neighbours([row_key(skip, r.cells) for r in records[1:]])
    ids = {r.line: (k, "") for r, k in zip(records[1:], keys, strict=True)}
    sheet = tmp_path / "s.csv"
    # workload 2's row copied to the top, workload 3's row deleted, workload 4's appended
    sheet.write_text("\n".join([head, rows[1], rows[0], rows[1], rows[3], rows[3]]) + "\n")
    lost = write_statuses(sheet, {2: ("FINISHED e-1 A", "r1"), 3: ("FINISHED e-2 A", "r2"),
                                  4: ("FINISHED e-3 A", "r3"), 5: ("FINISHED e-4 A", "r4")},
                          identities=ids)
    assert lost == [4]
    assert sheet.read_text().splitlines()[1:] == [
        "e,2,,,,-,a.py,none,x", "e,1,FINISHED e-1 A,r1,,-,a.py,none,x",
        "e,2,FINISHED e-2 A,r2,,-,a.py,none,x", "e,4,FINISHED e-4 A,r4,,-,a.py,none,x",
        "e,4,,,,-,a.py,none,x"]
