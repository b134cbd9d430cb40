"""The launch's flags checked, and turned into what the rows inherit or a single run's spec.

``radtrack [options] train.py`` and ``radtrack [options] sheet.csv`` (radtrack/cli.py) take
the same flags (radtrack/cli_parser.py): each is checked here as its sheet column is, and
a bad one raises :class:`RadtrackError` naming the flag. A script's flags make its
:class:`RunSpec`; a sheet's rows inherit them unless their own cell says otherwise, and the
flags that describe one run only are refused with a sheet rather than ignored.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from radtrack.cli_parser import DEFAULT_EXPERIMENT, SINGLE_RUN_OPTIONS
from radtrack.errors import RadtrackError, SheetError
from radtrack.spec import DEFAULT_INTERVAL, RunSpec


def check_options(args: argparse.Namespace) -> None:
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
    from radtrack.compute.carbon import check_intensity, check_pue

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


def row_defaults(args: argparse.Namespace) -> dict[str, object]:
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
    options = _executor_flags(args)
    if options:
        d["executor_options"] = options
    if args.nodes is not None:  # --executor slurm: each row over N nodes (a Nodes cell wins)
        if args.node_rank is not None or args.master is not None:
            raise RadtrackError("--node-rank and --master start one node by hand; under "
                                "--executor slurm give --nodes N (or a Nodes column) alone")
        if args.nodes < 1:
            raise RadtrackError(f"--nodes must be >= 1, got {args.nodes}")
        d["nodes"] = args.nodes
    return d


def _executor_flags(args: argparse.Namespace) -> dict[str, str]:
    """The executors' row options given as flags (--partition, --time-limit, ...), checked
    like their sheet columns (radtrack/executor_contract.py RowOption)."""
    from radtrack.executor_registry import row_options

    out = {}
    for option in row_options():
        value = getattr(args, option.flag) if option.flag else None
        if value is not None:
            try:
                out[option.key] = option.parse(value.strip())
            except ValueError as exc:
                raise RadtrackError(f"--{(option.flag or '').replace('_', '-')}: {exc}") from None
    return out


def refuse_single_run_options(args: argparse.Namespace, sheet: Path) -> None:
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


def single_spec(args: argparse.Namespace, script: Path) -> RunSpec:
    """The one run ``radtrack [options] script.py [args...]`` asks for."""
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
