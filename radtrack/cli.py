"""``radtrack`` / ``python -m radtrack``: launch a script or a sheet, and the subcommands.

  radtrack [options] train.py [script args...]   one tracked run (a one-row sheet)
  radtrack [options] sheet.csv                   an experiment sheet
  (--detach-end / --wait-end: give the shell back before the runs are stored, or not)
  radtrack listeners                             installed listeners and availability
  radtrack sync                                  ship spools a killed launcher left behind
  radtrack status sheet.csv                      a sheet's launch, through its executor
  radtrack cancel sheet.csv                      stop a sheet's launch, through its executor
  radtrack report ...                            analysis tables (radtrack.analysis.report)
  radtrack export ...                            a wide, time-aligned table (radtrack.export)
  radtrack ui ...                                the Dash page (radtrack.frontend)
  radtrack copy --from URI --to URI [EXP ...]    copy runs between stores (radtrack.storecmds.copyruns)

This module is the launch: the flags parsed (radtrack/cli_parser.py: the parser, the usage
text, did-you-mean), checked and turned into rows (radtrack/cli_options.py), the target
read, planned and handed to its executor; a subcommand goes to
radtrack/cli_subcommands.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from radtrack import inputs, own_threads
from radtrack.cli_options import check_options, refuse_single_run_options, row_defaults, single_spec
from radtrack.cli_parser import SUBCOMMANDS, USAGE, build_parser, close_words
from radtrack.cli_subcommands import run_subcommand
from radtrack.errors import RadtrackError


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    from radtrack.run import quick_exit

    if argv is None and quick_exit.is_command():  # the command leaves without its
        quick_exit.leave(code)  # interpreter's teardown (0.5-1 s with pandas loaded)
    return code


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own_threads.limit()  # before anything imports NumPy (radtrack/own_threads.py)
    from radtrack.store.mlflow_client import radtrack_process

    radtrack_process()  # MLflow's settings for this process, the one place (store/handle.py)
    if not argv:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if argv[0] in SUBCOMMANDS:
        try:
            return run_subcommand(argv[0], argv[1:])
        except BrokenPipeError:  # `radtrack report EXP | head`: the reader had enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
            return 0
    args = build_parser().parse_args(argv)
    if args.target.lower().endswith(".csv") and args.script_args:
        # A sheet takes no script arguments: what follows it are radtrack's own options
        # ("radtrack sheet.csv --executor slurm"); anything else is reported below.
        again = build_parser().parse_args([*args.script_args, args.target],
                                          namespace=argparse.Namespace(**vars(args)))
        if again.target == args.target and not again.script_args:
            args = again
    try:
        _detach_end(args)
        from radtrack import gpus

        # nvidia-smi runs while the launcher imports the rest (in the launcher, not the
        # front that the detached end forked off)
        gpus.prefetch_inventory()
        with _sheet_lock(args):
            return _launch(args)
    except RadtrackError as exc:
        print(f"radtrack: error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        gpus_mod = sys.modules.get("radtrack.gpus")
        if gpus_mod is not None:
            gpus_mod.forget_launch()
        detached = sys.modules.get("radtrack.run.detach")
        if detached is not None:
            detached.done()  # a launcher that stored in the background: its pid file goes


def _detach_end(args: argparse.Namespace) -> None:
    """The detached end (radtrack/run/front.py): fork the front that gives the shell back
    once the launch is durable; this process goes on as the launcher."""
    from radtrack.executor_registry import pick
    from radtrack.run import front

    detach, why_not = front.wanted(args.end, sys.stdout.isatty(), args.dry_run,
                                   pick(args).why_end_waits)
    if why_not:
        print(f"[radtrack] --detach-end: waiting for the end all the same: {why_not}",
              file=sys.stderr)
    if detach:
        front.fork_front()


def _sheet_lock(args: argparse.Namespace) -> AbstractContextManager[None]:
    """A sheet is run by one launcher at a time, local or SLURM submitter (sheet/lock.py)."""
    target = Path(args.target)
    if args.dry_run or not target.name.lower().endswith(".csv") or not target.is_file():
        return nullcontext()
    from radtrack.sheet.lock import sheet_lock

    return sheet_lock(target.absolute())


def _launch(args: argparse.Namespace) -> int:
    """What every launch shares checked (the flags, the target), one executor picked and
    handed the launch (radtrack/executor_contract.py); it runs or submits the workloads."""
    from radtrack import sheet as sheets
    from radtrack.executor_contract import Launch
    from radtrack.executor_registry import pick
    from radtrack.store import tracking

    check_options(args)
    target = Path(args.target)
    if not target.exists():
        raise RadtrackError(_no_such_target(args.target))
    problem = inputs.script_problem(args.target, target.absolute())
    if problem:
        raise RadtrackError(problem)
    from radtrack.store.handle import StoreHandle

    # the one place a launch resolves its tracking URI; the handle carries it down
    store = StoreHandle(tracking.resolve_uri(args.tracking_uri))
    executor = pick(args)
    from radtrack.stored_reader import read_stored

    launch = Launch(target.absolute(), sheets.is_sheet(target), args, store,
                    read_stored=read_stored)
    executor.check(launch)
    if launch.sheet:
        if args.script_args:
            raise RadtrackError(f"{target} is a sheet: arguments after it "
                                f"({' '.join(args.script_args)}) belong in its Params column")
        refuse_single_run_options(args, target)
        launch.defaults = row_defaults(args)
    else:
        if target.suffix != ".py":
            raise RadtrackError(f"{target}: expected a Python script (.py) or a sheet (.csv)")
        launch.spec = single_spec(args, target)
    return executor.submit(launch)


def _no_such_target(text: str) -> str:
    """'reprot: no such file or command; did you mean 'report'?', or a file beside it."""
    path = Path(text)
    if not path.suffix and "/" not in text:
        close = close_words(text.lower(), SUBCOMMANDS)
        hint = (f"did you mean '{close[0]}'?" if close else
                f"the commands are {', '.join(SUBCOMMANDS)}")
        return f"{text}: no such file or command; {hint}"
    folder = path.parent
    try:
        siblings = [p.name for p in folder.iterdir() if p.suffix.lower() in (".py", ".csv")] \
            if folder.is_dir() else []
    except OSError:
        siblings = []
    close = close_words(path.name, siblings)
    return f"{text}: no such file" + (f"; did you mean '{folder / close[0]}'?" if close else "")
