"""The SLURM executor's side of the contract (radtrack/executor_contract.py): its flags,
its row options (slurm_options.py) and the launch handed to radtrack/executors/slurm.py.

Light to import: the launch's parser and the sheet reader ask it for its flags and
columns; sbatch, the ledger and the job machinery load only when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from radtrack.errors import RadtrackError
from radtrack.executor_contract import Enquiry, Launch
from radtrack.executors.slurm_options import ROW_OPTIONS
from radtrack.spec import RunSpec


class SlurmExecutor:
    """One batch job per workload (radtrack/executors/slurm.py)."""

    name = "slurm"
    flags = ("shared_fs", "detach", "sbatch_arg")
    row_options = ROW_OPTIONS

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        s = parser.add_argument_group("slurm executor (sheets; --executor slurm)")
        s.add_argument("--partition", default=None, help="slurm: sbatch --partition (sheet "
                                                         "column Partition wins)")
        s.add_argument("--account", default=None, help="slurm: sbatch --account (column Account)")
        s.add_argument("--time-limit", default=None,
                       help="slurm: job time limit as sbatch --time takes it, e.g. 30, 1:30:00, "
                            "2-00:00:00 (column TimeLimit; -t/--time is radT's max minutes)")
        s.add_argument("--qos", default=None, help="slurm: sbatch --qos (column QoS)")
        s.add_argument("--constraint", default=None,
                       help="slurm: sbatch --constraint (column Constraint)")
        s.add_argument("--cpus-per-task", default=None, metavar="N",
                       help="slurm: CPUs of each workload's job (column Cpus; default 2 per "
                            "row + 1 for the launcher and listeners)")
        s.add_argument("--mem", default=None,
                       help="slurm: memory of each workload's job as sbatch --mem takes it (16G)")
        s.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                       help="slurm: one more sbatch argument, passed as is; repeatable "
                            "(--sbatch-arg=--mem=16G --sbatch-arg=--exclusive)")
        s.add_argument("--shared-fs", action="store_true",
                       help="slurm: the sqlite:/// or file store path is on a filesystem every "
                            "node mounts (otherwise such a store is refused)")
        s.add_argument("--detach", action="store_true",
                       help="slurm: return after submitting; 'radtrack status SHEET' "
                            "refreshes it")

    def why_end_waits(self, asked: bool) -> str | None:
        # the submitter runs no script: its jobs store their own runs
        return ("the SLURM executor's jobs store their runs on their nodes (--detach "
                "returns after submitting)" if asked else "")

    def check(self, launch: Launch) -> None:
        if not launch.sheet:
            raise RadtrackError("--executor slurm runs experiment sheets (.csv); put the script "
                                "in a one-row sheet")

    def check_rows(self, specs: list[RunSpec], sheet: Path | None) -> None:
        from radtrack.executors.slurm_checks import check_for_slurm

        assert sheet is not None  # check() refused a script
        check_for_slurm(specs, sheet)

    def submit(self, launch: Launch) -> int:
        from radtrack.executors.slurm import SlurmOptions, launch_sheet

        a = launch.args
        opts = SlurmOptions(shared_fs=a.shared_fs, detach=a.detach,
                            sbatch_args=list(a.sbatch_arg), grace=a.grace)
        return launch_sheet(launch.target, launch.defaults, launch.store, opts, rerun=a.rerun,
                            dry_run=a.dry_run)

    def status(self, enquiry: Enquiry) -> int | None:
        from radtrack.executors.slurm_status import report

        return report(enquiry.target, enquiry.tracking_uri)

    def cancel(self, enquiry: Enquiry) -> int | None:
        from radtrack.executors.slurm_status import cancel

        return cancel(enquiry.target)


EXECUTOR = SlurmExecutor()
