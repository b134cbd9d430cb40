"""``radtrack listeners|sync|status|cancel|report|export|ui|copy ...``: each subcommand handed to
the module that owns it (radtrack/cli_parser.py ``SUBCOMMANDS``), once the launches still
storing in the background have stored what the readers among them read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radtrack.cli_parser import suggesting_subcommand_errors
from radtrack.reader_args import CHECKS


def run_subcommand(name: str, rest: list[str]) -> int:
    suggesting_subcommand_errors()
    if name == "listeners":
        return _list_listeners(rest)
    if name in CHECKS:  # --help and a wrong option answer before the command's module loads
        CHECKS[name](rest)
    if name in ("sync", "report", "export", "ui", "copy"):
        _await_finishers(name, rest)
    if name == "sync":
        from radtrack.sync_command import main as sync_main

        return sync_main(rest)
    if name in ("status", "cancel"):
        from radtrack.launch_control import main as control_main

        return control_main(name, rest)
    if name == "report":
        from radtrack.analysis.report import main as report_main

        return report_main(rest)
    if name == "export":
        from radtrack.export import main as export_main

        return export_main(rest)
    if name == "copy":
        from radtrack.storecmds.copyruns import main as copy_main

        return copy_main(rest)
    from radtrack.frontend.app import main as ui_main

    return ui_main(rest)


def _await_finishers(name: str, rest: list[str]) -> None:
    """Readers see complete runs: wait for launches still storing in the background
    (radtrack/run/background_launchers.py) in $RADTRACK_HOME (and, for sync, next to --spool)."""
    from radtrack.run.background_launchers import wait_for
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
