"""Malformed and hostile input through the real CLI (``python -m radtrack``): each is refused
before any run exists, one ``<file>:<line>: column <C>: ...`` line per problem (or one
``radtrack: error:`` line for a flag), exit 2, no traceback, no store touched."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"


def refused(sheet: Path, *extra: str) -> list[str]:
    """Run the sheet; every stderr line must be a located problem; nothing may start."""
    before = sheet.read_bytes()
    p = radtrack_cli("--tracking-uri", f"sqlite:///{sheet.parent / 'mlflow.db'}", *extra,
                     str(sheet), cwd=sheet.parent)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    lines[0] = lines[0].removeprefix("radtrack: error: ")
    for line in lines:
        assert re.match(rf"^{re.escape(str(sheet))}:\d+: column \S+: ", line), p.stderr
    assert not (sheet.parent / "mlflow.db").exists()  # no run, no store
    assert sheet.read_bytes() == before  # nothing written back
    assert not Path(f"{sheet}.lock").exists()  # the lock went with the launcher
    return lines


def _sheet(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    shutil.copy(SCRIPTS / "exit_code.py", tmp_path / "job.py")
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def test_unbalanced_quote_mid_file_runs_nothing(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f"{HEADER}\n"
                             "q,1,,,,-,job.py,none,0\n"
                             'q,2,,,,-,job.py,none,"0 --lr 1\n'
                             "q,3,,,,-,job.py,none,0\n"
                             'q,4,,,,-,job.py,none,"0"\n')
    lines = refused(sheet)
    assert lines == [f"{sheet}:3: column Params: unbalanced quote: the '\"' at character 22 "
                     "opens a quoted cell that does not close on this line, so the 2 line(s) "
                     "after it, up to the next '\"' (line 5), would be read as part of the "
                     "cell; close it on the same line, write a quote inside a quoted cell as "
                     "'\"\"', or use single quotes inside Params ('a b')"]


def test_unbalanced_quote_at_the_end_of_the_file(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f'{HEADER}\nq,1,,,,-,job.py,none,0\nq,2,,,,-,job.py,none,"0\n')
    (line,) = refused(sheet)
    assert line.startswith(f"{sheet}:3: column Params: unbalanced quote: the '\"' at "
                           "character 22 opens a quoted cell that is never closed before the "
                           "end of the file")


def test_every_hostile_cell_of_a_sheet_at_once(tmp_path: Path) -> None:
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    sheet = _sheet(tmp_path, f"{HEADER},Interval,MaxTime,Env,RunName\n"
                             "h,²,,,,-,job.py,none,0,,,,\n"
                             "h,1,,,,-,loop_a.py,none,0,,,,\n"
                             "h,2,,,,-,jo\x00b.py,none,0,,,,\n"
                             f"{'x' * 600},3,,,,-,job.py,none,0,,,,\n"
                             "h,4,,,,-,job.py,none,--mix+up 1,,,,\n"
                             "h,5,,,,-,job.py,none,0,nan,inf,,\n"
                             "h,6,,,,-,job.py,none,0,1e999,NaN,,\n"
                             "h,7,,,,-,job.py,top@inf,0,,,,\n"
                             f"h,8,,,,-,job.py,none,0,,,,{'r' * 251}\n"
                             "h,9,,,,-,job.py,none,--a\tb,,,,\n")
    lines = refused(sheet)
    where = [re.sub(r"^.*?:(\d+): column (\S+): .*$", r"\1 \2", line) for line in lines]
    assert where == ["2 Workload", "3 File", "4 File", "5 Experiment", "6 Params",
                     "7 Interval", "7 MaxTime", "8 Interval", "8 MaxTime", "9 Listeners",
                     "10 RunName", "11 Params"], lines
    text = "\n".join(lines)
    for expect in ("'²' holds '²' (U+00B2), which is not one of the ASCII digits 0-9",
                   "cannot be resolved to a file (Symlink loop",
                   "the cell holds a NUL byte (U+0000) at character 3",
                   "600 characters; MLflow accepts experiment names of at most 500",
                   "'mix+up' would be an MLflow param name, which MLflow refuses",
                   "'nan' is not a finite number (seconds): nan and inf are refused",
                   "'inf' is not a finite number (minutes)",
                   "'1e999' is too large to be a finite number (seconds)",
                   "listener 'top@inf': the interval after '@' must be a number of seconds > 0",
                   "251 characters; MLflow keeps run names of at most 250",
                   "the cell holds a tab (U+0009) at character 4"):
        assert expect in text, text


def test_cuda_visible_devices_in_env_with_devices(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path, f"{HEADER},Env\nc,1,,,0,-,job.py,none,0,CUDA_VISIBLE_DEVICES=1\n")
    p = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)  # the GPU check is a warning here
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert (f"{sheet}:2: column Env: CUDA_VISIBLE_DEVICES=1 conflicts with Devices 0, from "
            "which radtrack sets it") in p.stderr
    # without Devices, Env chooses the GPUs: accepted
    sheet.write_text(f"{HEADER},Env\nc,1,,,,-,job.py,none,0,CUDA_VISIBLE_DEVICES=1\n")
    assert radtrack_cli("--dry-run", str(sheet), cwd=tmp_path).returncode == 0


def test_an_accepted_param_name_still_runs(tmp_path: Path) -> None:
    """MLflow's own rule, not a stricter one: ':' '/' '.' '-' are fine in a param name."""
    sheet = _sheet(tmp_path, f"{HEADER}\nok,1,,,,-,job.py,none,0 --opt:a/b.c-d 1\n")
    p = radtrack_cli("--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", str(sheet),
                     cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    from mlflow import MlflowClient

    c = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = [r for r in c.search_runs([c.get_experiment_by_name("ok").experiment_id])
              if r.data.tags.get("radtrack.role") == "row"]
    assert run.data.params["opt:a/b.c-d"] == "1"
    assert not Path(f"{sheet}.lock").exists()


@pytest.mark.parametrize("args,expect", [
    (["--interval", "nan"], "argument --interval: 'nan' is not a finite number"),
    (["--interval", "inf"], "argument --interval: 'inf' is not a finite number"),
    (["--interval", "٣"], "argument --interval: '٣' holds '٣' (U+0663), which is not one of "
                           "the ASCII digits 0-9"),
    (["--max-time", "nan"], "argument --max-time/-t/--time: 'nan' is not a finite number"),
    (["--max-epoch", "²"], "argument --max-epoch/-i/--epoch: '²' holds '²'"),
    (["-w", "²"], "argument -w/--workload: '²' holds '²'"),
    (["--grace", "inf"], "argument --grace: 'inf' is not a finite number (seconds)"),
    (["--carbon-intensity", "nan"], "argument --carbon-intensity: 'nan' is not a finite"),
    (["-l", "top@nan"], "listener 'top@nan': the interval after '@' must be a number"),
    (["-l", "smi+top@٣"], "--listeners: listener 'top@٣': the interval after '@' must be a "
                          "number of seconds > 0, e.g. top@0.5 ('٣' holds '٣' (U+0663)"),
    (["-e", "x" * 600], "-e/--experiment: 600 characters; MLflow accepts experiment names of "
                        "at most 500"),
    (["--run-name", "r" * 300], "--run-name: 300 characters; MLflow keeps run names of at "
                                "most 250"),
    (["--run-name", "a\x1bb"], "argument --run-name: 'a\\x1bb' holds an escape character "
                               "(U+001B) at character 2"),
    (["SCRIPT_ARGS", "--mix+up", "1"], "the script's arguments: 'mix+up' would be an MLflow "
                                       "param name, which MLflow refuses"),
])
def test_flags_refused_in_one_line(tmp_path: Path, args: list[str], expect: str) -> None:
    script = str(SCRIPTS / "exit_code.py")
    if args[0] == "SCRIPT_ARGS":
        argv = [script, *args[1:]]
    else:
        argv = [*args, script]
    p = radtrack_cli("--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", *argv,
                     cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert expect in lines[0], lines[0]
    assert not (tmp_path / "mlflow.db").exists()
