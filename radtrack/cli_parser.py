"""The ``radtrack`` command's options: one parser for a launch (a script or a sheet);
the subcommands (``SUBCOMMANDS``) parse their own."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any, NoReturn

from radtrack import inputs
from radtrack.spec import DEFAULT_INTERVAL

SUBCOMMANDS = ("listeners", "sync", "status", "cancel", "report", "export", "ui", "copy")
DEFAULT_EXPERIMENT = "Default"
# options that describe a single run; a sheet's rows set them in their own columns
SINGLE_RUN_OPTIONS = {"experiment": ("-e/--experiment", "Experiment"),
                      "workload": ("-w/--workload", "Workload"),
                      "devices": ("-d/--devices", "Devices"),
                      "collocation": ("-c/--collocation", "Collocation"),
                      "run_name": ("--run-name", "RunName")}

USAGE = """\
usage: radtrack [options] SCRIPT.py [script args...]   run a script as a tracked run
       radtrack [options] SHEET.csv                    run an experiment sheet
       radtrack COMMAND [--help]

commands:
  listeners   the listeners installed and whether this host can run them
  report      analysis tables of an experiment (radtrack report EXPERIMENT)
  export      a wide, time-aligned table of an experiment's runs
  ui          the page to explore runs (http://127.0.0.1:8050)
  sync        store what a killed or disconnected launcher left spooled
  status      a sheet's launch (refreshed from its jobs under --executor slurm)
  cancel      stop a sheet's launch (its SLURM jobs, or its launcher here)
  copy        copy runs from one store to another (a laptop's to the team server)

radtrack --help lists the options; radtrack --version prints the version.
docs/cli.md has it all.
"""


def close_words(word: str, choices: Sequence[str]) -> list[str]:
    """The choices a mistyped ``word`` is likely to mean, best first."""
    return difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line saying what is wrong, exit 2, before anything starts.
        self.exit(2, f"radtrack: error: {self._did_you_mean(message)} (see radtrack --help)\n")

    def _did_you_mean(self, message: str) -> str:
        return did_you_mean(self, message)


def did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's ``message``, with '--dry-rn (did you mean --dry-run?)' for each option
    ``parser`` does not know but has a close one of."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return message
    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    words = []
    for word in message[len(prefix):].split():
        close = close_words(word.split("=", 1)[0], known) if word.startswith("-") else []
        words.append(f"{word} (did you mean {close[0]}?)" if close else word)
    return prefix + " ".join(words)


def suggesting_subcommand_errors() -> None:
    """The subcommands' own parsers (plain argparse, in their modules) name the close option
    too: argparse's error() gets did_you_mean's message (this process is the CLI's)."""
    original = argparse.ArgumentParser.error
    if getattr(original, "suggests", False):
        return

    def error(self: argparse.ArgumentParser, message: str) -> NoReturn:
        original(self, did_you_mean(self, message))

    error.suggests = True  # type: ignore[attr-defined]
    argparse.ArgumentParser.error = error  # type: ignore[method-assign]


class _Version(argparse.Action):
    """``--version``: the release and, from a git checkout, its commit (radtrack/version.py)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from radtrack.version import describe

        print(f"radtrack {describe()}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="radtrack",
        description="Run a Python script or an experiment sheet as tracked MLflow runs with "
                    "hardware metrics. Subcommands: " + ", ".join(SUBCOMMANDS) + ".",
        usage="radtrack [options] SCRIPT.py [script args...] | SHEET.csv | "
              "{listeners,sync,status,cancel,report,export,ui,copy} ...",
    )
    p.add_argument("target", help="a Python script or an experiment sheet (.csv)")
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments passed to the script verbatim")
    p.add_argument("-V", "--version", action=_Version,
                   help="print radtrack's version (with the git commit from a checkout) and exit")
    p.add_argument("-e", "--experiment", default=None,
                   type=inputs.argument(inputs.text_argument),
                   help=f"MLflow experiment name or id of a single run (default "
                        f"{DEFAULT_EXPERIMENT}); a sheet names its own in its Experiment column")
    p.add_argument("-w", "--workload", type=inputs.argument(inputs.count), default=None,
                   help="workload number (default: the next free one in the experiment)")
    p.add_argument("-d", "--devices", default="", help="GPUs: 0, 0+1, or a GPU UUID")
    p.add_argument("-c", "--collocation", default="-",
                   help="'-' (plain), 'mps', 'mps:<percent>' or a MIG profile such as 1g.10gb")
    p.add_argument("-l", "--listeners", default=None,
                   help="listeners joined by '+', e.g. smi+top+dcgm; 'none' for none "
                        "(default: every installed listener available on this host)")
    p.add_argument("--interval", type=inputs.argument(inputs.finite), default=None,
                   help=f"seconds between listener samples (default {DEFAULT_INTERVAL:g})")
    p.add_argument("--max-epoch", "-i", "--epoch", type=inputs.argument(inputs.integer),
                   default=None, metavar="N",
                   help="stop the script once it logs a metric with epoch >= N")
    p.add_argument("--max-time", "-t", "--time", type=inputs.argument(inputs.finite),
                   default=None, metavar="MINUTES",
                   help="stop the script after N minutes")
    p.add_argument("--manual", action="store_true",
                   help="start listeners and timing when the script enters RADTBenchmark()")
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)")
    p.add_argument("--run-name", default=None, type=inputs.argument(inputs.text_argument),
                   help="MLflow run name (single runs)")
    p.add_argument("--grace", type=inputs.argument(inputs.seconds), default=10.0,
                   help="seconds between SIGINT, SIGTERM and SIGKILL when stopping a script")
    p.add_argument("--rerun", "-r", action="store_true",
                   help="sheets: rerun FAILED and KILLED workloads")
    # radT's launcher flags (docs/radt-migration.md): --local is what radtrack always does.
    p.add_argument("--local", action="store_true",
                   help="radT's flag; a no-op: radtrack always runs in the current environment")
    p.add_argument("--conda", action="store_true",
                   help="radT's per-run conda environments: not supported (refused)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and exit 0; what this host lacks (no GPU, no MPS tool) "
                        "is a warning (the launch refuses it), and the listeners it cannot offer "
                        "are named with why")
    p.add_argument("--allow-cpu-fallback", action="store_true",
                   help="run rows that ask for GPUs (Devices, -d) on a host without one, on "
                        "CPU, with a warning (refused otherwise); MPS, MIG, Clocks and "
                        "PowerLimit still need a GPU")
    end = p.add_mutually_exclusive_group()
    end.add_argument("--detach-end", dest="end", action="store_const", const="detach",
                     help="give the shell back once the scripts ended and their status and "
                          "samples are on disk; the runs are stored in the background "
                          "(`radtrack sync` finishes them if that is interrupted); the default "
                          "on a terminal (else $RADTRACK_END=detach)")
    end.add_argument("--wait-end", dest="end", action="store_const", const="wait",
                     help="return only once everything is stored (the default off a terminal, "
                          "or $RADTRACK_END=wait)")
    p.add_argument("--carbon-intensity", type=inputs.argument(inputs.finite), default=None,
                   metavar="G_PER_KWH",
                   help="grid carbon intensity for the footprint (g CO2e/kWh; also "
                        "$RADTRACK_CARBON_INTENSITY or a CarbonIntensity column)")
    p.add_argument("--pue", type=inputs.argument(inputs.finite), default=None,
                   help="data-centre power usage effectiveness for the footprint (default 1)")
    s = p.add_argument_group("executor (sheets)")
    s.add_argument("--executor", default=None,
                   help="where workloads run: local (this host, default) or slurm (one batch "
                        "job per workload); default $RADTRACK_EXECUTOR, else local")
    from radtrack.executor_registry import add_options

    add_options(p)  # each executor's own flags (radtrack/executor_contract.py)
    return p
