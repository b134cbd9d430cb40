"""Quoted cells over several lines parse as CSV does (RFC 4180), and a refusal names the real
line, column and character (issue 42, "Sheets"), through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,RunName"


def _sheet(tmp_path: Path, text: str) -> Path:
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    sheet = tmp_path / "s.csv"
    sheet.write_bytes(text.encode())
    return sheet


def test_a_quoted_params_cell_over_two_lines_runs_and_is_written_back(tmp_path: Path) -> None:
    # a comment holding U+2028 (a line separator to str.splitlines, not to CSV or an editor)
    # and a Params cell over two lines (CRLF inside): the row runs with both lines' arguments
    text = (f"# sweep\u2028notes\n{HEADER}\n"
            'ml,1,,,,-,train.py,none,"--batch-size 64\r\n  named",\n'
            "ml,2,,,,-,train.py,none,--lr 2,\n")
    sheet = _sheet(tmp_path, text)
    plan = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "train.py --batch-size 64 named" in plan.stdout
    p = radtrack_cli("--wait-end", str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "hello from train_ok batch=64 name=named" in p.stdout
    after = sheet.read_bytes().decode()
    lines = after.split("\n")
    assert lines[0] == "# sweep\u2028notes" and lines[1] == HEADER  # kept byte for byte
    assert lines[2].startswith("ml,1,FINISHED ml-1 A,")  # the record's first line
    assert lines[3] == '  named",'  # its second line untouched
    assert lines[4].startswith("ml,2,FINISHED ml-2 A,")
    again = radtrack_cli(str(sheet), cwd=tmp_path)  # and it resumes from what it wrote
    assert again.returncode == 0, again.stderr
    assert "workload ml-1: all 1 rows FINISHED, skipped" in again.stderr
    assert "workload ml-2: all 1 rows FINISHED, skipped" in again.stderr


def test_a_multi_line_cell_elsewhere_is_refused_at_its_line_and_column(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f'{HEADER}\nml,1,,,,-,train.py,none,--lr 1,"first\nsecond"\n'
                             "ml,x,,,,-,train.py,none,,\n")
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"radtrack: error: {sheet}:2: column RunName: the cell holds a line break (U+000A) at "
        "character 6; only printable text is accepted (spaces, not tabs; one line); a quoted "
        "cell may go over several lines only in Params and Env",
        f"{sheet}:4: column Workload: 'x' is not a whole number: give digits 0-9, e.g. 3; rows "
        "with the same Experiment and Workload run together"]


def test_a_line_separator_in_params_is_refused_where_it_is(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f"{HEADER}\nls,1,,,,-,train.py,none,,\n"
                             "ls,2,,,,-,train.py,none,--lr\u20282,\n"
                             "ls,y,,,,-,train.py,none,,\n")
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"radtrack: error: {sheet}:3: column Params: the cell holds the control character LINE "
        "SEPARATOR (U+2028) at character 5; only printable text is accepted (spaces, not tabs; "
        "one line)",
        f"{sheet}:4: column Workload: 'y' is not a whole number: give digits 0-9, e.g. 3; rows "
        "with the same Experiment and Workload run together"]


def test_a_quote_that_swallows_rows_is_still_an_unbalanced_quote(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f'{HEADER}\nq,1,,,,-,train.py,none,"--lr 1\n'
                             "q,2,,,,-,train.py,none,--lr 2,\n"
                             'q,3,,,,-,train.py,none,"--lr 3",\n')
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"radtrack: error: {sheet}:2: column Params: unbalanced quote: the '\"' at character 24 "
        "opens a quoted cell that does not close on this line, so the 2 line(s) after it, up to "
        "the next '\"' (line 4), would be read as part of the cell; close it on the same line, "
        "write a quote inside a quoted cell as '\"\"', or use single quotes inside Params ('a b')")
