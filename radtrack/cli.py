"""``radtrack`` / ``python -m radtrack``: launch a script or a sheet, and the subcommands.

  radtrack [options] train.py [script args...]   one tracked run (a one-row sheet)
  radtrack [options] sheet.csv                   an experiment sheet
  (--detach-end / --wait-end: give the shell back before the runs are stored, or not)
  radtrack listeners                             installed listeners and availability
  radtrack sync                                  ship spools a killed launcher left behind
  radtrack status sheet.csv                      refresh a sheet from its SLURM jobs
  radtrack report ...                            analysis tables (radtrack.analysis.report)
  radtrack export ...                            a wide, time-aligned table (radtrack.export)
  radtrack ui ...                                the Dash page (radtrack.frontend)
  radtrack copy --from URI --to URI [EXP ...]    copy runs between stores (radtrack.store.copyruns)

This module is the launch: the flags parsed (radtrack/cli_parser.py: the parser, the usage
text, did-you-mean), checked and turned into rows (radtrack/cli_options.py), the target
read, planned and handed to its executor; a subcommand goes to
radtrack/cli_subcommands.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from radtrack import inputs, own_threads
from radtrack.cli_options import check_options, refuse_single_run_options, row_defaults, single_spec
from radtrack.cli_parser import SUBCOMMANDS, USAGE, build_parser, close_words
from radtrack.cli_subcommands import run_subcommand
from radtrack.errors import RadtrackError, SheetError

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    from radtrack.run import quick_exit

    if argv is None and quick_exit.is_command():  # the command leaves without its
        quick_exit.leave(code)  # interpreter's teardown (0.5-1 s with pandas loaded)
    return code


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own_threads.limit()  # before anything imports NumPy (radtrack/own_threads.py)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
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
    if args.nodes is not None:
        return  # node 0 of a multi-node row waits for every node's end (radtrack/nodes/)
    from radtrack.executors import resolve
    from radtrack.run import front

    detach, why_not = front.wanted(args.end, sys.stdout.isatty(), args.dry_run,
                                   resolve(args.executor))
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
    from radtrack import sheet as sheets
    from radtrack.store import tracking

    check_options(args)
    target = Path(args.target)
    if not target.exists():
        raise RadtrackError(_no_such_target(args.target))
    problem = inputs.script_problem(args.target, target.absolute())
    if problem:
        raise RadtrackError(problem)
    uri = tracking.resolve_uri(args.tracking_uri)
    from radtrack.executors import resolve

    executor = resolve(args.executor)
    slurm_only = [f"--{n.replace('_', '-')}" for n in ("shared_fs", "detach", "sbatch_arg")
                  if getattr(args, n)]
    if executor != "slurm" and slurm_only:
        raise RadtrackError(f"{', '.join(slurm_only)} only apply with --executor slurm")
    if executor == "slurm":
        if not sheets.is_sheet(target):
            raise RadtrackError("--executor slurm runs experiment sheets (.csv); put the script "
                                "in a one-row sheet")
        if args.script_args:
            raise RadtrackError(f"{target} is a sheet: arguments after it "
                                f"({' '.join(args.script_args)}) belong in its Params column")
        refuse_single_run_options(args, target)
        from radtrack.executors.slurm import SlurmOptions, launch_sheet

        opts = SlurmOptions(shared_fs=args.shared_fs, detach=args.detach,
                            sbatch_args=list(args.sbatch_arg), grace=args.grace)
        return launch_sheet(target.absolute(), row_defaults(args), uri, opts, rerun=args.rerun,
                            dry_run=args.dry_run)
    if sheets.is_sheet(target):
        if args.script_args:
            raise RadtrackError(f"{target} is a sheet: arguments after it ({' '.join(args.script_args)}) "
                                "belong in its Params column")
        refuse_single_run_options(args, target)
        defaults = row_defaults(args)
        specs = _for_plan(lambda host: sheets.read_sheet(
            target.absolute(), defaults, check_host=host, cpu_fallback=args.allow_cpu_fallback,
            warn=_warn), args.dry_run)
        sheet_path: Path | None = target.absolute()
    else:
        if target.suffix != ".py":
            raise RadtrackError(f"{target}: expected a Python script (.py) or a sheet (.csv)")
        specs = [single_spec(args, target)]
        _for_plan(lambda host: sheets.validate_command_line(
            specs[0], check_host=host, cpu_fallback=args.allow_cpu_fallback, warn=_warn),
            args.dry_run)
        sheet_path = None
    from radtrack.plan import format_plan, group_workloads

    workloads = group_workloads(specs)
    if args.dry_run:
        from radtrack.plan import unavailable_listeners

        print(format_plan(workloads))
        missing = unavailable_listeners(workloads)
        if missing:
            print(missing)
        return 0
    # a server that is down: the scripts run all the same and spool; radtrack sync stores it
    tracking.check_reachable(uri, run_anyway=True)
    # MLflow is imported and the store opened before the scripts start only where a check
    # needs it (a server's permissions, a database's experiments, a sheet's earlier runs):
    # otherwise the runs are created while the scripts already run (radtrack/run/record.py)
    clients: list[MlflowClient] = []

    def client() -> MlflowClient:
        if not clients:
            clients.append(tracking.client(uri))
        return clients[0]

    if tracking.away_at_launch():
        pass  # nothing to check against (opening it would wait out MLflow's retries)
    elif tracking.needs_store_checks(uri):
        tracking.check_experiments(client, uri, [w[0].experiment for w in workloads])
    if sheet_path is not None:
        from radtrack.resume import pending_workloads

        workloads = pending_workloads(workloads, client, args.rerun, uri=uri,
                                      log=lambda m: print(f"[radtrack] {m}", file=sys.stderr))
    # a CLI launch's workload number (Workload 0: the next one) is taken when its run is made
    from radtrack.executors import local

    if args.nodes is not None or args.node_rank is not None or args.master is not None:
        from radtrack.nodes.launch import check, launch

        check(args.nodes, args.node_rank, args.master, args.collocation)
        if sheet_path is not None:
            raise RadtrackError("--nodes/--node-rank/--master run one script on each node by "
                                "hand; a sheet's rows go over nodes with --executor slurm")
        return launch(specs[0], uri, args.grace, args.nodes, args.node_rank, args.master)
    return local.run(workloads, uri, args.grace, sheet_path)


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


def _warn(message: str) -> None:
    print(f"radtrack: warning: {message}", file=sys.stderr)


def _for_plan(validate: Callable[[bool], T], dry_run: bool) -> T:
    """``validate(check_host)``; for --dry-run, what this host lacks (no GPU, no MPS tool, a
    MIG profile) is a warning under the plan, so a sheet can be planned on a laptop before
    it goes to the GPU host (a GPU row included: a real run refuses it unless
    --allow-cpu-fallback). A real run refuses it, and every other problem stays an error."""
    try:
        return validate(True)
    except SheetError as exc:
        if not dry_run:
            raise
        try:
            result = validate(False)
        except SheetError:
            raise exc from None
        for problem in exc.problems:
            _warn(problem)
        print("radtrack: warning: this host cannot run it as planned (above); the plan is "
              "printed for a host that can, where a real run checks again", file=sys.stderr)
        return result
