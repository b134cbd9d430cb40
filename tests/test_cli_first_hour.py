"""The CLI's first-hour rough edges (issue 42, "The CLI"), each through the real entry point
(``python -m radtrack`` and the installed ``radtrack`` script): the version, usage and help,
did-you-mean, single-run options with a sheet, export's unknown metric, one message for a
directory given as the script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO, radtrack_cli, run_cli

from radtrack import __version__
from radtrack.cli_parser import SUBCOMMANDS
from radtrack.version import describe

SCRIPTS = Path(__file__).parent / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params"
RADTRACK = Path(sys.executable).parent / "radtrack"


def test_version_from_the_package_and_the_checkout() -> None:
    for entry in ([str(RADTRACK)], [sys.executable, "-m", "radtrack"]):
        for flag in ("--version", "-V"):
            p = subprocess.run([*entry, flag], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            assert p.stdout.strip() == f"radtrack {describe()}"
    assert describe().split("+")[0] == __version__
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode == 0 and (REPO / ".git").exists():  # run from a checkout
        assert describe().startswith(f"{__version__}+g{head.stdout.strip()}")


def test_the_version_changes_with_the_code(tmp_path: Path) -> None:
    """Two commits of a checkout never print the same version; edited files say so."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "radtrack").mkdir()
    code = tmp_path / "radtrack" / "a.py"
    code.write_text("x = 1\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    assert describe(tmp_path) == __version__  # not a checkout yet: the release alone
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    first = describe(tmp_path)
    assert first == f"{__version__}+g{git('rev-parse', '--short=7', 'HEAD')}"
    code.write_text("x = 2\n")
    assert describe(tmp_path) == f"{first}.dirty"
    git("commit", "-qam", "two")
    second = describe(tmp_path)
    assert second != first and not second.endswith(".dirty")


def test_bare_radtrack_prints_usage_with_the_commands() -> None:
    p = radtrack_cli()
    assert p.returncode == 2
    assert "the following arguments are required" not in p.stderr
    assert p.stderr.startswith("usage: radtrack [options] SCRIPT.py")
    for command in SUBCOMMANDS:
        assert f"\n  {command} " in p.stderr, p.stderr
    assert "--version" in p.stderr and "--help" in p.stderr


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(command: str) -> None:
    p = radtrack_cli(command, "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"usage: radtrack {command}"), p.stdout
    assert p.stderr == ""


def test_launcher_help_lists_version_and_cpu_fallback() -> None:
    p = radtrack_cli("--help")
    assert p.returncode == 0
    for option in ("--version", "--allow-cpu-fallback", "--dry-run", "-e EXPERIMENT"):
        assert option in p.stdout, option


def test_listeners_refuses_arguments_in_one_line() -> None:
    p = radtrack_cli("listeners", "--bogus")
    assert p.returncode == 2
    assert "radtrack listeners: error: unrecognized arguments: --bogus" in p.stderr


def test_did_you_mean(tmp_path: Path) -> None:
    p = radtrack_cli("reprot", "quickstart", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == ("radtrack: error: reprot: no such file or command; did you "
                                "mean 'report'?")
    p = radtrack_cli("Exprot", "coloc", "--out", "x.csv", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip() == (
        "radtrack: error: Exprot: no such file or command; did you mean 'export'?")
    p = radtrack_cli("frobnicate", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip() == (
        "radtrack: error: frobnicate: no such file or command; the commands are "
        f"{', '.join(SUBCOMMANDS)}")
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    p = radtrack_cli("trian.py", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == "radtrack: error: trian.py: no such file; did you mean 'train.py'?"
    p = radtrack_cli("--dry-rn", "train.py", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == ("radtrack: error: unrecognized arguments: --dry-rn (did you "
                                "mean --dry-run?) (see radtrack --help)")
    # a subcommand's own options too
    p = run_cli("report", "quickstart", "--formt", "csv", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == ("radtrack report: error: unrecognized "
                                                 "arguments: --formt (did you mean --format?) csv")
    assert not (tmp_path / "mlflow.db").exists()


def test_single_run_options_with_a_sheet_are_refused_not_ignored(tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    sheet = tmp_path / "qs2.csv"
    sheet.write_text(f"{HEADER}\nqs,1,,,,-,train.py,none,\n")
    p = radtrack_cli("-e", "qs2", str(sheet), cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"radtrack: error: -e/--experiment: applies to a single script; the sheet {sheet} sets "
        "it per row in its Experiment column (it names qs): edit the sheet (or a copy of it), "
        "or leave out -e/--experiment")
    assert sheet.read_text() == f"{HEADER}\nqs,1,,,,-,train.py,none,\n"
    # options after the sheet too, and several at once
    p = radtrack_cli(str(sheet), "-d", "0", "--run-name", "x", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip() == (
        f"radtrack: error: -d/--devices, --run-name: apply to a single script; the sheet {sheet} "
        "sets them per row in its Devices, RunName columns: edit the sheet (or a copy of it), "
        "or leave out -d/--devices, --run-name")
    # -e naming the experiment the rows name changes nothing: accepted
    p = radtrack_cli("-e", "qs", "--dry-run", str(sheet), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "mlflow.db").exists()


def test_a_directory_as_the_script_is_one_message(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    p = radtrack_cli("models", cwd=tmp_path)
    assert p.returncode == 2
    cli = p.stderr.strip().removeprefix("radtrack: error: ")
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"{HEADER}\ne,1,,,,-,models,none,\n")
    p = radtrack_cli(str(sheet), cwd=tmp_path)
    assert p.returncode == 2
    in_sheet = p.stderr.strip().removeprefix(f"radtrack: error: {sheet}:2: column File: ")
    expected = f"'models' is a directory ({tmp_path / 'models'}); give the Python script to run"
    assert cli == in_sheet == expected


def test_export_unknown_metric_names_the_close_ones_and_the_command(store: str,
                                                                   tmp_path: Path) -> None:
    p = radtrack_cli("-e", "coloc", "-l", "top", "--interval", "0.2", str(SCRIPTS / "busy.py"),
                     "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    listed = run_cli("export", "coloc", "--list-metrics", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    keys = listed.stdout.split()
    assert "top/cpu_pct" in keys and "top/proc/cpu_pct" in keys
    p = run_cli("export", "coloc", "--metrics", "top/cpu", "--out",
                     str(tmp_path / "x.csv"), cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip()
    assert "radtrack.analysis" not in line  # a CLI command, not a Python function
    assert line.startswith("radtrack export: unknown metric 'top/cpu' (close: ")
    assert "top/cpu_pct" in line and "top/proc/cpu_pct" in line
    assert line.endswith(f"in experiment 'coloc'; 'radtrack export coloc --list-metrics' lists "
                         f"all {len(keys)}")
    assert not (tmp_path / "x.csv").exists()
    # a known one still exports
    ok = run_cli("export", "coloc", "--metrics", "top/cpu_pct", "--out",
                      str(tmp_path / "x.csv"), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    missing_out = run_cli("export", "coloc", cwd=tmp_path)
    assert missing_out.returncode == 2 and "--out FILE is required" in missing_out.stderr


def test_the_reader_commands_arguments_answer_before_their_modules_load() -> None:
    """``--help`` and a wrong option of report/export/ui answer from radtrack/reader_args.py
    (no MLflow, pandas or Dash import), and it offers what the modules do."""
    import subprocess as sp

    from radtrack.compute.correlation import METHODS
    from radtrack.reader_args import CORRELATION_METHODS

    assert CORRELATION_METHODS == METHODS
    code = ("import sys; from radtrack.cli import main\n"
            "for argv in (['report', '--help'], ['export', 'x'], ['ui', '--port', 'x']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('mlflow', 'pandas', 'dash') if m in sys.modules))")
    p = sp.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip().splitlines()[-1] == "[]", p.stdout + p.stderr
    assert "--out FILE is required" in p.stderr and "invalid int value: 'x'" in p.stderr
