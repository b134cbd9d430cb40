"""The local executor: run the workloads on this host, one after another (the launcher in
radtrack/run/experiment.py), writing each workload's statuses back to the sheet.

:func:`prepare` is the local launch up to the scripts' start (the rows read and checked
against this host, the plan for ``--dry-run``, the store's checks, a sheet's runs already
done left out); the multi-node launch (radtrack/executors/multinode.py) shares it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from radtrack.errors import RadtrackError, SheetError
from radtrack.executor_contract import Enquiry, Launch, RowOption
from radtrack.spec import RunSpec

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")


class LocalExecutor:
    """This host, one workload after another."""

    name = "local"
    flags: tuple[str, ...] = ()
    row_options: tuple[RowOption, ...] = ()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        pass  # the launch's common flags are all it takes

    def why_end_waits(self, asked: bool) -> str | None:
        return None  # the scripts run here: their end may go to the background

    def check(self, launch: Launch) -> None:
        pass  # the common checks (radtrack/cli.py) are all a local launch needs up front

    def check_rows(self, specs: list[RunSpec], sheet: Path | None) -> None:
        spread = [s for s in specs if s.nodes > 1]
        if spread:
            where = f"{spread[0].sheet}:{spread[0].row}: column Nodes" if spread[0].row else "--nodes"
            raise RadtrackError(f"{where}: a row over {spread[0].nodes} nodes runs as one SLURM job "
                                "(--executor slurm), or by hand with `radtrack --nodes N --node-rank "
                                "K --master HOST` on each node (docs/sheets.md#multi-node-rows)")

    def submit(self, launch: Launch) -> int:
        from radtrack.run.experiment import run_workloads

        workloads = prepare(launch)
        if workloads is None:
            return 0
        self.check_rows([s for specs in workloads for s in specs], launch.target)
        sheet = launch.target if launch.sheet else None
        return run_workloads(workloads, launch.store, grace=launch.args.grace, sheet=sheet,
                             read_stored=launch.read_stored)

    def status(self, enquiry: Enquiry) -> int | None:
        from radtrack.executors.local_control import status

        return status(enquiry.target)

    def cancel(self, enquiry: Enquiry) -> int | None:
        from radtrack.executors.local_control import cancel

        return cancel(enquiry.target)


EXECUTOR = LocalExecutor()


def prepare(launch: Launch) -> list[list[RunSpec]] | None:
    """The launch's workloads, read and checked against this host, with the store checked
    and (a sheet) the runs already done left out; None after ``--dry-run`` printed the plan."""
    from radtrack import sheet as sheets
    from radtrack.store import tracking

    args, uri = launch.args, launch.uri
    if launch.sheet:
        specs = _for_plan(lambda host: sheets.read_sheet(
            launch.target, launch.defaults, check_host=host, cpu_fallback=args.allow_cpu_fallback,
            warn=_warn), args.dry_run)
    else:
        assert launch.spec is not None  # radtrack/cli.py makes a script's spec
        specs = [launch.spec]
        _for_plan(lambda host: sheets.validate_command_line(
            specs[0], check_host=host, cpu_fallback=args.allow_cpu_fallback, warn=_warn),
            args.dry_run)
    from radtrack.plan import format_plan, group_workloads

    workloads = group_workloads(specs)
    if args.dry_run:
        from radtrack.plan import unavailable_listeners

        print(format_plan(workloads))
        missing = unavailable_listeners(workloads)
        if missing:
            print(missing)
        return None
    # a server that is down: the scripts run all the same and spool; radtrack sync stores it
    tracking.check_reachable(uri, run_anyway=True)
    # MLflow is imported and the store opened before the scripts start only where a check
    # needs it (a server's permissions, a database's experiments, a sheet's earlier runs):
    # otherwise the runs are created while the scripts already run (radtrack/run/record.py)
    def client() -> MlflowClient:
        mlflow: MlflowClient = launch.store.mlflow
        return mlflow

    if tracking.away_at_launch():
        pass  # nothing to check against (opening it would wait out MLflow's retries)
    elif tracking.needs_store_checks(uri):
        tracking.check_experiments(client, uri, [w[0].experiment for w in workloads])
    if launch.sheet:
        from radtrack.resume import pending_workloads

        workloads = pending_workloads(workloads, client, args.rerun, uri=uri,
                                      log=lambda m: print(f"[radtrack] {m}", file=sys.stderr))
    # a CLI launch's workload number (Workload 0: the next one) is taken when its run is made
    return workloads


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
