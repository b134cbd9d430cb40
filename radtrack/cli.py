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
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from radtrack import inputs
from radtrack.cli_parser import (
    DEFAULT_EXPERIMENT,
    SINGLE_RUN_OPTIONS,
    SUBCOMMANDS,
    USAGE,
    build_parser,
    close_words,
    suggesting_subcommand_errors,
)
from radtrack.errors import RadtrackError, SheetError
from radtrack.spec import DEFAULT_INTERVAL, RunSpec

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    if not argv:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if argv[0] in SUBCOMMANDS:
        return _subcommand(argv[0], argv[1:])
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


def _defaults(args: argparse.Namespace) -> dict[str, object]:
    """CLI flags that rows inherit unless their own cell says otherwise."""
    from radtrack.listeners import registry

    d: dict[str, object] = {}
    if args.listeners is not None:
        d["listeners"] = registry.parse_names(args.listeners)
    for name in ("interval", "max_epoch", "max_time"):
        if getattr(args, name) is not None:
            d[name] = getattr(args, name)
    if args.manual:
        d["manual"] = True
    if args.carbon_intensity is not None:
        d["carbon_intensity"] = args.carbon_intensity
        d["carbon_source"] = "--carbon-intensity"
    if args.pue is not None:
        d["pue"] = args.pue
    slurm = _slurm_flags(args)
    if slurm:
        d["slurm"] = slurm
    if args.nodes is not None:  # --executor slurm: each row over N nodes (a Nodes cell wins)
        if args.node_rank is not None or args.master is not None:
            raise RadtrackError("--node-rank and --master start one node by hand; under "
                                "--executor slurm give --nodes N (or a Nodes column) alone")
        if args.nodes < 1:
            raise RadtrackError(f"--nodes must be >= 1, got {args.nodes}")
        d["nodes"] = args.nodes
    return d


def _slurm_flags(args: argparse.Namespace) -> dict[str, str]:
    """--partition/--account/--time/--qos/--constraint, checked like their sheet columns."""
    from radtrack.sheet.cells import parse_constraint, parse_slurm_name, parse_time_limit
    from radtrack.sheet.slurm_checks import parse_cpus, parse_mem

    out = {}
    for flag, key, parse in (("partition", "partition", parse_slurm_name),
                             ("account", "account", parse_slurm_name),
                             ("time_limit", "time_limit", parse_time_limit),
                             ("qos", "qos", parse_slurm_name),
                             ("constraint", "constraint", parse_constraint),
                             ("cpus_per_task", "cpus_per_task", parse_cpus),
                             ("mem", "mem", parse_mem)):
        value = getattr(args, flag)
        if value is not None:
            try:
                out[key] = parse(value.strip())
            except ValueError as exc:
                raise RadtrackError(f"--{flag.replace('_', '-')}: {exc}") from None
    return out


def _check_options(args: argparse.Namespace) -> None:
    if args.conda:
        raise RadtrackError("--conda: per-run conda environments are not supported; radtrack runs "
                            "the script with the Python that runs radtrack: create and activate "
                            "the environment first (conda env create -f conda.yaml; conda "
                            "activate NAME; install radtrack into it), then run radtrack "
                            "without --conda")
    if args.interval is not None and args.interval <= 0:
        raise RadtrackError(f"--interval must be > 0, got {args.interval}")
    if args.max_time is not None and args.max_time <= 0:
        raise RadtrackError(f"--max-time must be > 0 minutes, got {args.max_time}")
    if args.max_epoch is not None and args.max_epoch < 0:
        raise RadtrackError(f"--max-epoch must be >= 0, got {args.max_epoch}")
    from radtrack.postrun.footprint import check_intensity, check_pue

    try:
        if args.carbon_intensity is not None:
            check_intensity(args.carbon_intensity, "--carbon-intensity")
        if args.pue is not None:
            check_pue(args.pue, "--pue")
    except ValueError as exc:
        raise RadtrackError(str(exc)) from None
    from radtrack.postrun.footprint import resolve

    resolve(None, None, "")  # a malformed $RADTRACK_CARBON_INTENSITY / $RADTRACK_PUE: say so now
    if args.listeners is not None:
        from radtrack.listeners import registry
        from radtrack.sheet.cells import check_listener_intervals

        try:
            check_listener_intervals(args.listeners)
        except ValueError as exc:
            raise RadtrackError(f"--listeners: {exc}") from None
        names = registry.parse_names(args.listeners) or []
        bad = registry.unknown(names)
        if bad:
            raise RadtrackError(f"--listeners: unknown listener(s) {', '.join(bad)}; installed: "
                                f"{', '.join(sorted(registry.installed()))}")


def _launch(args: argparse.Namespace) -> int:
    from radtrack import sheet as sheets
    from radtrack.store import tracking

    _check_options(args)
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
        _single_run_options_with_sheet(args, target)
        from radtrack.executors.slurm import SlurmOptions, launch_sheet

        opts = SlurmOptions(shared_fs=args.shared_fs, detach=args.detach,
                            sbatch_args=list(args.sbatch_arg), grace=args.grace)
        return launch_sheet(target.absolute(), _defaults(args), uri, opts, rerun=args.rerun,
                            dry_run=args.dry_run)
    if sheets.is_sheet(target):
        if args.script_args:
            raise RadtrackError(f"{target} is a sheet: arguments after it ({' '.join(args.script_args)}) "
                                "belong in its Params column")
        _single_run_options_with_sheet(args, target)
        defaults = _defaults(args)
        specs = _for_plan(lambda host: sheets.read_sheet(
            target.absolute(), defaults, check_host=host, cpu_fallback=args.allow_cpu_fallback,
            warn=_warn), args.dry_run)
        sheet_path: Path | None = target.absolute()
    else:
        if target.suffix != ".py":
            raise RadtrackError(f"{target}: expected a Python script (.py) or a sheet (.csv)")
        specs = [_single_spec(args, target)]
        _for_plan(lambda host: sheets.validate_command_line(
            specs[0], check_host=host, cpu_fallback=args.allow_cpu_fallback, warn=_warn),
            args.dry_run)
        sheet_path = None
    from radtrack.plan import format_plan, group_workloads

    workloads = group_workloads(specs)
    if args.dry_run:
        print(format_plan(workloads))
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


def _single_run_options_with_sheet(args: argparse.Namespace, sheet: Path) -> None:
    """-e, -w, -d, -c and --run-name describe one run: with a sheet, whose rows set them in
    their own columns, they are refused rather than ignored (-e naming the experiment every
    row already names changes nothing, and is accepted)."""
    given = [name for name in SINGLE_RUN_OPTIONS
             if getattr(args, name) not in (None, "", *(("-",) if name == "collocation" else ()))]
    if not given:
        return
    named = ""
    if "experiment" in given:
        from radtrack import sheet as sheets

        try:
            experiments = {s.experiment for s in sheets.read_sheet(sheet.absolute(),
                                                                     check_host=False)}
        except SheetError:
            experiments = set()  # its problems are reported by the launch's own reading
        if experiments == {args.experiment} and given == ["experiment"]:
            return
        named = f" (it names {', '.join(sorted(experiments))})" if experiments else ""
    options = ", ".join(SINGLE_RUN_OPTIONS[n][0] for n in given)
    columns = ", ".join(SINGLE_RUN_OPTIONS[n][1] for n in given)
    raise RadtrackError(f"{options}: {'applies' if len(given) == 1 else 'apply'} to a single "
                        f"script; the sheet {sheet} sets {'it' if len(given) == 1 else 'them'} "
                        f"per row in its {columns} column{'s' if len(given) > 1 else ''}{named}: "
                        f"edit the sheet (or a copy of it), or leave out {options}")


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


def _single_spec(args: argparse.Namespace, script: Path) -> RunSpec:
    from radtrack.listeners import registry
    from radtrack.sheet import parse_collocation, parse_devices

    try:
        devices = parse_devices(args.devices.strip())
    except ValueError as exc:
        raise RadtrackError(f"--devices: {exc}") from None
    try:
        collocation = parse_collocation(args.collocation)
    except ValueError as exc:
        raise RadtrackError(f"--collocation: {exc}") from None
    return RunSpec(
        experiment=args.experiment if args.experiment is not None else DEFAULT_EXPERIMENT,
        workload=args.workload if args.workload is not None else 0,  # 0: next free, set later
        file=script.absolute(),
        args=list(args.script_args),
        devices=devices,
        collocation=collocation,
        listeners=registry.parse_names(args.listeners),
        interval=args.interval if args.interval is not None else DEFAULT_INTERVAL,
        max_epoch=args.max_epoch,
        max_time=args.max_time,
        manual=args.manual,
        run_name=args.run_name,
        carbon_intensity=args.carbon_intensity,
        pue=args.pue,
        carbon_source="--carbon-intensity" if args.carbon_intensity is not None else "",
    )


def _subcommand(name: str, rest: list[str]) -> int:
    suggesting_subcommand_errors()
    if name == "listeners":
        return _list_listeners(rest)
    if name in ("sync", "report", "export", "ui", "copy"):
        _await_finishers(name, rest)
    if name == "sync":
        from radtrack.sync_command import main as sync_main

        return sync_main(rest)
    if name == "status":
        from radtrack.executors.slurm_status import main as status_main

        return status_main(rest)
    if name == "report":
        from radtrack.analysis.report import main as report_main

        return report_main(rest)
    if name == "export":
        from radtrack.export import main as export_main

        return export_main(rest)
    if name == "copy":
        from radtrack.store.copyruns import main as copy_main

        return copy_main(rest)
    from radtrack.frontend.app import main as ui_main

    return ui_main(rest)


def _await_finishers(name: str, rest: list[str]) -> None:
    """Readers see complete runs: wait for launches still storing in the background
    (radtrack/run/finishers.py) in $RADTRACK_HOME (and, for sync, next to --spool)."""
    from radtrack.run.finishers import wait_for
    from radtrack.script import env as renv

    homes = [renv.radtrack_home()]
    for i, arg in enumerate(rest):
        spool = (arg.split("=", 1)[1] if arg.startswith("--spool=") else
                 rest[i + 1] if arg == "--spool" and i + 1 < len(rest) else None)
        if name == "sync" and spool:
            homes.append(Path(spool).absolute().parent)
    for home in dict.fromkeys(homes):
        wait_for(home, lambda line: print(line, file=sys.stderr, flush=True))


def _list_listeners(rest: list[str]) -> int:
    import warnings

    from radtrack.listeners import registry

    parser = argparse.ArgumentParser(
        prog="radtrack listeners",
        description="List every listener installed (radtrack.listeners entry points, built-in "
                    "and third-party), whether this host can run it, and why not. "
                    "'python -m radtrack.listeners NAME --interval 0.1' runs one alone "
                    "(docs/listeners.md).")
    parser.parse_args(rest)  # --help; anything else: one line, exit 2
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        found = registry.installed()
    width = max(len(n) for n in found) if found else 4
    for name in sorted(found):
        cls = found[name]
        if isinstance(cls, Exception):
            state = f"broken     failed to load: {cls}"
        else:
            ok = registry.availability(name)
            kind = " (wraps the command)" if cls.wraps_command else ""
            state = ("available" + kind) if ok else f"unavailable  {ok.reason}"
        print(f"{name:<{width}}  {state}")
    return 0
