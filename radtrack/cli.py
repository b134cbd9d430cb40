"""``radtrack`` / ``python -m radtrack``: launch a script or a sheet, and the subcommands.

  radtrack [options] train.py [script args...]   one tracked run (a one-row sheet)
  radtrack [options] sheet.csv                   an experiment sheet
  radtrack listeners                             installed listeners and availability
  radtrack sync                                  ship spools a killed launcher left behind
  radtrack report ...                            analysis tables (radtrack.analysis.report)
  radtrack ui ...                                the Dash page (radtrack.frontend)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from radtrack.errors import RadtrackError
from radtrack.spec import DEFAULT_INTERVAL, RunSpec

SUBCOMMANDS = ("listeners", "sync", "report", "ui")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line saying what is wrong, exit 2, before anything starts.
        self.exit(2, f"radtrack: error: {message} (see radtrack --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="radtrack",
        description="Run a Python script or an experiment sheet as tracked MLflow runs with "
                    "hardware metrics. Subcommands: " + ", ".join(SUBCOMMANDS) + ".",
        usage="radtrack [options] SCRIPT.py [script args...] | SHEET.csv | "
              "{listeners,sync,report,ui} ...",
    )
    p.add_argument("target", help="a Python script or an experiment sheet (.csv)")
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments passed to the script verbatim")
    p.add_argument("-e", "--experiment", default="Default", help="MLflow experiment name or id")
    p.add_argument("-w", "--workload", type=int, default=None,
                   help="workload number (default: the next free one in the experiment)")
    p.add_argument("-d", "--devices", default="", help="GPUs: 0, 0+1, or a GPU UUID")
    p.add_argument("-c", "--collocation", default="-",
                   help="'-' (plain), 'mps', 'mps:<percent>' or a MIG profile such as 1g.10gb")
    p.add_argument("-l", "--listeners", default=None,
                   help="listeners joined by '+', e.g. smi+top+dcgm; 'none' for none "
                        "(default: every installed listener available on this host)")
    p.add_argument("--interval", type=float, default=None,
                   help=f"seconds between listener samples (default {DEFAULT_INTERVAL:g})")
    p.add_argument("--max-epoch", type=int, default=None,
                   help="stop the script once it logs a metric with epoch >= N")
    p.add_argument("--max-time", type=float, default=None, help="stop the script after N minutes")
    p.add_argument("--manual", action="store_true",
                   help="start listeners and timing when the script enters RADTBenchmark()")
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)")
    p.add_argument("--run-name", default=None, help="MLflow run name (single runs)")
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds between SIGINT, SIGTERM and SIGKILL when stopping a script")
    p.add_argument("--rerun", action="store_true", help="sheets: rerun FAILED and KILLED workloads")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    if argv and argv[0] in SUBCOMMANDS:
        return _subcommand(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return _launch(args)
    except RadtrackError as exc:
        print(f"radtrack: error: {exc}", file=sys.stderr)
        return exc.exit_code


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
    return d


def _check_options(args: argparse.Namespace) -> None:
    if args.interval is not None and args.interval <= 0:
        raise RadtrackError(f"--interval must be > 0, got {args.interval}")
    if args.max_time is not None and args.max_time <= 0:
        raise RadtrackError(f"--max-time must be > 0 minutes, got {args.max_time}")
    if args.max_epoch is not None and args.max_epoch < 0:
        raise RadtrackError(f"--max-epoch must be >= 0, got {args.max_epoch}")
    if args.listeners is not None:
        from radtrack.listeners import registry

        names = registry.parse_names(args.listeners) or []
        bad = registry.unknown(names)
        if bad:
            raise RadtrackError(f"--listeners: unknown listener(s) {', '.join(bad)}; installed: "
                                f"{', '.join(sorted(registry.installed()))}")


def _launch(args: argparse.Namespace) -> int:
    from radtrack import sheet as sheets
    from radtrack import tracking

    _check_options(args)
    target = Path(args.target)
    if not target.exists():
        raise RadtrackError(f"{target}: no such file")
    if not target.is_file() or not os.access(target, os.R_OK):
        raise RadtrackError(f"{target}: not a readable file")
    uri = tracking.resolve_uri(args.tracking_uri)
    if sheets.is_sheet(target):
        if args.script_args:
            raise RadtrackError(f"{target} is a sheet: arguments after it ({' '.join(args.script_args)}) "
                                "belong in its Params column")
        specs = sheets.read_sheet(target.absolute(), _defaults(args))
        sheet_path: Path | None = target.absolute()
    else:
        if target.suffix != ".py":
            raise RadtrackError(f"{target}: expected a Python script (.py) or a sheet (.csv)")
        specs = [_single_spec(args, target)]
        sheets.validate_command_line(specs[0])
        sheet_path = None
    from radtrack.plan import format_plan, group_workloads

    workloads = group_workloads(specs)
    if args.dry_run:
        print(format_plan(workloads))
        return 0
    tracking.check_reachable(uri)
    client = tracking.client(uri)
    if sheet_path is not None:
        from radtrack.resume import pending_workloads

        workloads = pending_workloads(workloads, client, args.rerun, log=lambda m: print(f"[radtrack] {m}", file=sys.stderr))
    elif specs[0].workload == 0:
        exp_id = tracking.experiment_id(client, uri, specs[0].experiment)
        specs[0].workload = tracking.next_workload_number(client, exp_id)
    from radtrack.experiment import run_workloads

    return run_workloads(workloads, uri, grace=args.grace, sheet=sheet_path)


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
        experiment=args.experiment,
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
    )


def _subcommand(name: str, rest: list[str]) -> int:
    if name == "listeners":
        return _list_listeners(rest)
    if name == "sync":
        from radtrack.sync import main as sync_main

        return sync_main(rest)
    if name == "report":
        from radtrack.analysis.report import main as report_main

        return report_main(rest)
    from radtrack.frontend.app import main as ui_main

    return ui_main(rest)


def _list_listeners(rest: list[str]) -> int:
    import warnings

    from radtrack.listeners import registry

    if rest:
        print(f"radtrack: error: 'radtrack listeners' takes no arguments, got {' '.join(rest)}",
              file=sys.stderr)
        return 2
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
