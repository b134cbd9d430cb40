"""``radtrack status SHEET`` and ``radtrack cancel SHEET``: what a sheet's launch says of
itself, and stopping it, through the executor that runs it (radtrack/executor_registry.py
``control``): SLURM's job ledger first (status refreshes the sheet from the jobs, cancel
scancels them), else the local launcher holding the sheet (its lock and the rows' Status
cells; cancel sends it SIGINT, as Ctrl-C). ``--executor`` asks one executor only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radtrack.errors import RadtrackError

_ABOUT = {
    "status": "Report an experiment sheet's launch: a sheet submitted with --executor slurm "
              "has its Status, Run and Job cells refreshed from its jobs; one run here shows "
              "its launcher and its rows' Status cells. Exit 0 when every workload finished.",
    "cancel": "Stop an experiment sheet's launch: scancel its SLURM jobs still queued or "
              "running, or signal the launcher running it on this host as Ctrl-C does.",
}


def main(action: str, argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"radtrack {action}", description=_ABOUT[action])
    p.add_argument("sheet", help="the experiment sheet (.csv) a launch runs or ran")
    if action == "status":
        p.add_argument("--tracking-uri", default=None,
                       help="store the SLURM jobs track into (default: the one they were "
                            "submitted with)")
    p.add_argument("--executor", default=None, metavar="NAME",
                   help="ask this executor only (default: each in turn, SLURM's job ledger "
                        "before the local launcher)")
    a = p.parse_args(argv)
    sheet = Path(a.sheet).absolute()
    from radtrack import executor_registry
    from radtrack.executor_contract import Enquiry

    try:
        if not sheet.is_file():
            raise RadtrackError(f"{sheet}: no such sheet")
        enquiry = Enquiry(sheet, getattr(a, "tracking_uri", None))
        code = executor_registry.control(action, enquiry, a.executor)
        if code is None:
            raise RadtrackError(
                f"{sheet}: nothing of it {'runs' if action == 'cancel' else 'ran'}"
                f"{' under ' + a.executor if a.executor else ''}: no launcher holds it"
                f"{'' if action == 'cancel' else ', none of its rows has a Status'} and no "
                "SLURM jobs are recorded for it")
        return code
    except RadtrackError as exc:
        print(f"radtrack: error: {exc}", file=sys.stderr)
        return exc.exit_code
