"""Sheet parsing, validation (a corpus of malformed sheets) and status write-back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doubles.fakehost import SECOND_UUID, FakeHost, gpu

from radtrack import sheet
from radtrack.errors import SheetError
from radtrack.sheet import read_sheet, write_status, write_statuses

BAD = Path(__file__).parents[1] / "data" / "bad_sheets"
BAD_SHEETS = sorted(BAD.glob("*.csv"))
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"


@pytest.fixture
def host(tmp_path, monkeypatch) -> FakeHost:
    return FakeHost(tmp_path, monkeypatch,
                    gpus=[gpu(0), gpu(1, SECOND_UUID, mig_mode="Enabled")])


def make(tmp_path: Path, text: str, name: str = "sheet.csv") -> Path:
    (tmp_path / "train.py").write_text("print('hi')\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def problems_of(path: Path, **kw) -> list[str]:
    with pytest.raises(SheetError) as info:
        read_sheet(path, **kw)
    return info.value.problems


def test_corpus_is_large_enough():
    assert len(BAD_SHEETS) >= 30


@pytest.mark.parametrize("path", BAD_SHEETS, ids=lambda p: p.stem)
def test_bad_sheet_is_rejected_with_its_message(path, host):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: ")
    expected = f"{path.absolute()}{first.removeprefix('# expect: ')}"
    problems = problems_of(path)
    assert any(p.startswith(expected) for p in problems), "\n".join(problems)
    assert len(problems) == 1, "\n".join(problems)
    assert host.argvs(changing_only=True) == []  # validation never touches the GPU


def test_every_problem_is_reported_at_once(tmp_path, host):
    path = make(tmp_path, f"{HEADER},Interval\n"
                          "e,x,,,0,-,train.py,top,,1\n"
                          ",1,,,9,MPS:0,missing.py,foo,,-3\n")
    problems = problems_of(path)
    where = [p.split(": ")[0].rsplit(":", 1)[1] + " " + p.split(": ")[1] for p in problems]
    assert where == ["2 column Workload", "3 column Experiment", "3 column File",
                     "3 column Collocation", "3 column Listeners", "3 column Interval",
                     "3 column Devices"]


def test_valid_sheet_parses_into_typed_runspecs(tmp_path, host):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bert.py").write_text("")
    path = make(tmp_path, (
        "# radT-style sheet, padded\n"
        " experiment , WORKLOAD , Status , Run , Devices , Collocation , File ,"
        " Listeners , Params , Max Epoch , max_time , Env , Clocks , PowerLimit , interval\n"
        "\n"
        "  exp  ,  3  ,  ,  ,  0  ,  -  ,  train.py  ,  smi+top  , \"--lr 0.1, --name 'a b'\" ,"
        " 2 , 1.5 , A=1 B=\"x y\" , 1200-1980 , 300 , 0.5\n"
        "# a comment between rows\n"
        "exp,3,FINISHED exp-3 B,0123abc,1,1g.10gb,sub/bert.py,dcgmi,--x,,,,,,\n"
        "7,1,,,,,train.py,none,,,,,,,\n"))
    a, b, c = read_sheet(path, {"interval": 2.0, "listeners": ["top"], "env": {"A": "0", "Z": "9"},
                                "max_epoch": 5})
    assert (a.experiment, a.workload, a.row, a.sheet) == ("exp", 3, 4, path)
    assert a.file == tmp_path / "train.py"
    assert a.args == ["--lr", "0.1,", "--name", "a b"]
    assert (a.devices, a.collocation, a.listeners) == (["0"], "-", ["smi", "top"])
    assert (a.max_epoch, a.max_time, a.interval) == (2, 1.5, 0.5)  # sheet cell wins
    assert a.env == {"A": "1", "Z": "9", "B": "x y"}
    assert (a.clocks, a.power_limit) == ("1200,1980", 300.0)
    assert (b.row, b.status, b.run_id) == (6, "FINISHED exp-3 B", "0123abc")
    assert (b.collocation, b.listeners, b.file) == ("1g.10gb", ["dcgm"], tmp_path / "sub" / "bert.py")
    assert (b.interval, b.max_epoch, b.env) == (2.0, 5, {"A": "0", "Z": "9"})  # CLI flag wins
    assert (c.experiment, c.devices, c.listeners, c.collocation) == ("7", [], [], "-")


def test_empty_listeners_cell_falls_back_to_flag_then_default(tmp_path, host):
    path = make(tmp_path, f"{HEADER}\ne,1,,,,,train.py,,\n")
    assert read_sheet(path)[0].listeners is None
    assert read_sheet(path, {"listeners": ["smi"]})[0].listeners == ["smi"]


def test_collocation_forms_are_normalized(tmp_path, host):
    path = make(tmp_path, f"{HEADER}\ne,1,,,0,,train.py,,\ne,2,,,0,mps,train.py,,\n"
                          f"e,3,,,{SECOND_UUID},MPS: 50,train.py,,\ne,4,,,1,3G.40GB,train.py,,\n")
    assert [s.collocation for s in read_sheet(path)] == ["-", "mps", "mps:50", "3g.40gb"]


def test_check_host_false_skips_host_checks(tmp_path, host):
    path = make(tmp_path, f"{HEADER}\ne,1,,,7,2g.20gb,train.py,,\n")
    assert read_sheet(path, check_host=False)[0].devices == ["7"]
    assert host.calls() == []
    assert "device 7 is not on this host" in problems_of(path)[0]


def test_without_gpus_a_devices_row_and_gpu_features_are_refused(tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch, present=False)
    path = make(tmp_path, f"{HEADER}\ne,1,,,3,-,train.py,,\n")
    assert problems_of(path) == [
        f"{path}:2: column Devices: asks for GPU 3, but no GPU listener reports a GPU on this host "
        "(no GPU driver, or its tool or library missing: 'radtrack listeners' says why), so the "
        "script would run on CPU: remove "
        "the devices to run it on CPU, or pass --allow-cpu-fallback to run it as it is"]
    seen: list[str] = []
    assert read_sheet(path, cpu_fallback=True, warn=seen.append)[0].devices == ["3"]
    assert seen == [f"{path}:2: column Devices: asks for GPU 3, but no GPU listener reports "
                    "a GPU on this host: the script runs on CPU (--allow-cpu-fallback)"]
    assert read_sheet(path, check_host=False)[0].devices == ["3"]  # a plan, not this host
    path = make(tmp_path, f"{HEADER}\ne,1,,,0,1g.10gb,train.py,,\n", "mig.csv")
    # the fallback does not cover what cannot run on CPU
    with pytest.raises(SheetError) as err:
        read_sheet(path, cpu_fallback=True)
    assert err.value.problems == [f"{path}:2: column Collocation: MIG needs an NVIDIA GPU, but "
                                  "no GPU listener reports a GPU on this host"]


def test_mps_needs_the_control_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    path = make(tmp_path, f"{HEADER}\ne,1,,,0,MPS,train.py,,\n")
    assert "MPS needs nvidia-cuda-mps-control on PATH" in problems_of(path)[0]


def test_missing_sheet_and_is_sheet(tmp_path):
    assert problems_of(tmp_path / "nope.csv") == [f"{tmp_path / 'nope.csv'}: no such sheet"]
    assert sheet.is_sheet("a/b.CSV") and sheet.is_sheet(Path("x.csv"))
    assert not sheet.is_sheet("train.py")


def test_unknown_default_key_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="unknown RunSpec field"):
        read_sheet(make(tmp_path, f"{HEADER}\n"), {"intervall": 1})


def test_status_helpers():
    assert sheet.status_cell("finished", "exp-3 A") == "FINISHED exp-3 A"
    assert sheet.status_word("  FINISHED exp-3 A") == "FINISHED"
    assert sheet.status_word("") == ""


# --- write-back ------------------------------------------------------------------------

PADDED = (
    "\ufeff# sweep of batch sizes\r\n"
    "Experiment, Workload, Status,            Run,  Devices, Collocation, File,     Listeners, Params\r\n"
    "\r\n"
    "  exp,     1,        ,                  ,     0,       -,           train.py, top,       \"--a 1, --b 2\"\r\n"
    "# keep me\r\n"
    "  exp,     1,        RUNNING exp-1 B,   abc,  0,       -,           train.py, top,       --c\r\n"
    "  exp,     2,        ,                  ,     0,       \"-\",         train.py, top,       \"x,\"\"y\"\"\"\r\n"
)


def test_write_status_edits_only_two_cells(tmp_path, host):
    path = make(tmp_path, "")
    path.write_bytes(PADDED.encode("utf-8"))
    write_status(path, 4, "FINISHED", "f" * 32, run_name="exp-1 A")
    after = path.read_bytes().decode("utf-8")
    before_lines, after_lines = PADDED.split("\r\n"), after.split("\r\n")
    assert len(before_lines) == len(after_lines)
    changed = [i for i, (x, y) in enumerate(zip(before_lines, after_lines, strict=True)) if x != y]
    assert changed == [3]
    # An empty padded cell keeps one leading blank; the value is wider, so the old
    # width cannot be kept and one trailing blank separates it from the comma.
    assert after_lines[3] == ("  exp,     1, FINISHED exp-1 A , " + "f" * 32 +
                              " ,     0,       -,           train.py, top,       \"--a 1, --b 2\"")
    assert after.startswith("\ufeff#")
    specs = read_sheet(path)
    assert (specs[0].status, specs[0].run_id, specs[0].args) == \
        ("FINISHED exp-1 A", "f" * 32, ["--a", "1,", "--b", "2"])


def test_shorter_value_keeps_the_cell_width(tmp_path, host):
    path = make(tmp_path, "")
    path.write_bytes(PADDED.encode("utf-8"))
    write_statuses(path, {6: ("KILLED", "r1"), 7: ("FAILED exp-2 A", "r,2")})
    lines = path.read_bytes().decode("utf-8-sig").split("\n")
    assert lines[5] == ("  exp,     1,        KILLED         ,   r1 ,  0,       -,           "
                        "train.py, top,       --c\r")
    assert lines[6].startswith('  exp,     2, FAILED exp-2 A , "r,2"            ,     0,')
    assert lines[6].endswith("train.py, top,       \"x,\"\"y\"\"\"\r")
    specs = read_sheet(path)
    assert [(s.status, s.run_id) for s in specs] == [
        ("", ""), ("KILLED", "r1"), ("FAILED exp-2 A", "r,2")]
    assert specs[2].args == ['x,y']  # shlex removes the inner quotes


def test_sheet_without_status_and_run_gets_them_appended(tmp_path):
    path = make(tmp_path, "Experiment,Workload,File\n# c\ne,1,train.py\ne,1,train.py\n")
    write_status(path, 3, "FINISHED", "rid", run_name="e-1 A")
    assert path.read_text() == ("Experiment,Workload,File,Status,Run\n# c\n"
                                "e,1,train.py,FINISHED e-1 A,rid\ne,1,train.py\n")


def test_row_that_is_not_a_run_is_refused(tmp_path):
    path = make(tmp_path, f"# c\n{HEADER}\ne,1,,,0,-,train.py,,\n")
    for row in (1, 2, 9):
        with pytest.raises(SheetError, match=f":{row}: no run starts on this line"):
            write_status(path, row, "FINISHED", "x")


def test_failed_write_leaves_the_original_intact(tmp_path, monkeypatch):
    path = make(tmp_path, f"{HEADER}\ne,1,,,0,-,train.py,,\n")
    original = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_status(path, 2, "FINISHED", "x")
    assert path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["double-state.json", "sheet.csv",
                                                          "train.py"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["sheet.csv", "train.py"]


def test_write_keeps_file_mode(tmp_path):
    path = make(tmp_path, f"{HEADER}\ne,1,,,0,-,train.py,,\n")
    path.chmod(0o640)
    write_status(path, 2, "FINISHED", "x")
    assert path.stat().st_mode & 0o777 == 0o640
