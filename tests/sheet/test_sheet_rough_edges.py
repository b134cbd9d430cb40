"""Sheet rough edges a new user hits, each through the real CLI (``radtrack sheet.csv``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"


def refused(sheet: Path, *extra: str) -> str:
    """Run the sheet; it must be refused in one stderr line before anything starts."""
    p = radtrack_cli(*extra, str(sheet), cwd=sheet.parent)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert not (sheet.parent / "mlflow.db").exists()  # nothing started, no store touched
    return lines[0]


@pytest.mark.parametrize("sep,name", [(";", "semicolons"), ("\t", "tabs")])
def test_sheet_not_comma_separated(store: str, tmp_path: Path, sep: str, name: str) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text(sep.join(HEADER.split(",")) + "\n"
                     + sep.join(["e", "1", "", "", "", "-", str(SCRIPTS / "train_ok.py"), "none", ""])
                     + "\n")
    line = refused(sheet)
    assert line == (f"radtrack: error: {sheet}:1: the sheet is not comma-separated (its header "
                    f"is separated by {name}); save it as CSV with commas")


def test_file_that_is_a_directory(store: str, tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"{HEADER}\ne,1,,,,-,models,none,\n")
    line = refused(sheet)
    assert f"{sheet}:2: column File: 'models' is a directory" in line


def test_file_that_is_not_a_python_script(store: str, tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("1,2,3\n")
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"{HEADER}\ne,1,,,,-,data.txt,none,\n")
    line = refused(sheet)
    assert line.endswith(f"{sheet}:2: column File: 'data.txt' is not a Python script (.py); "
                         "radtrack runs File with Python")


def test_empty_listener_name(store: str, tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"{HEADER}\ne,1,,,,-,{SCRIPTS / 'train_ok.py'},top++iostat,\n")
    line = refused(sheet)
    assert f"{sheet}:2: column Listeners: 'top++iostat' has an empty listener name" in line
    # the same on the command line
    p = radtrack_cli("-l", "top++iostat", str(SCRIPTS / "train_ok.py"), cwd=tmp_path)
    assert p.returncode == 2 and "'top++iostat' has an empty listener name" in p.stderr


def test_new_sheet_without_status_and_run_columns(store: str, tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "exit_code.py", tmp_path / "job.py")
    sheet = tmp_path / "new.csv"
    text = ("# a new sheet: no Status, no Run\r\n"
            "Experiment, Workload, Devices, Collocation, File,   Listeners, Params\r\n"
            "fresh,      1,        ,        -,           job.py, none,      0\r\n"
            "fresh,      2,        ,        -,           job.py, none,      0\r\n")
    sheet.write_bytes(text.encode())
    p = radtrack_cli(str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    after = sheet.read_bytes().decode().split("\r\n")
    before = text.split("\r\n")
    assert after[0] == before[0]
    assert after[1] == before[1] + ",Status,Run"
    for old, new in zip(before[2:4], after[2:4], strict=True):
        assert new.startswith(old + ",FINISHED fresh-")  # every byte before kept
        assert len(new.rsplit(",", 1)[1]) == 32  # the run id
    # and the sheet resumes from the columns it got
    again = radtrack_cli(str(sheet), cwd=tmp_path)
    assert again.returncode == 0 and "all 1 rows FINISHED, skipped" in again.stderr


def test_dry_run_of_mps_and_mig_rows_without_a_gpu(store: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a laptop: no nvidia-smi, no nvidia-cuda-mps-control on PATH
    for tool in ("nvidia-smi", "nvidia-cuda-mps-control"):
        assert shutil.which(tool) is None, f"this test needs a host without {tool}"
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    sheet = tmp_path / "gpu.csv"
    sheet.write_text(f"{HEADER}\n"
                     "g,1,,,0,MPS,train.py,none,\n"
                     "g,1,,,0,MPS,train.py,none,\n"
                     "g,2,,,1,3g.40gb,train.py,none,\n")
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "g-1" in p.stdout and "g-2" in p.stdout and "mps" in p.stdout.lower()
    warnings = p.stderr.strip().splitlines()
    assert all(w.startswith("radtrack: warning: ") for w in warnings), p.stderr
    assert any("MPS needs nvidia-cuda-mps-control on PATH" in w for w in warnings)
    assert any(f"{sheet}:4: column Collocation: MIG needs an NVIDIA GPU" in w for w in warnings)
    assert not (tmp_path / "mlflow.db").exists()
    # a real run still refuses, naming the same problems
    real = radtrack_cli(str(sheet), cwd=tmp_path)
    assert real.returncode == 2
    assert "MPS needs nvidia-cuda-mps-control on PATH" in real.stderr
    # problems that are not about this host stay errors under --dry-run
    sheet.write_text(f"{HEADER}\ng,1,,,0,MPS,missing.py,none,\n")
    bad = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert bad.returncode == 2 and "column File: script 'missing.py' not found" in bad.stderr
