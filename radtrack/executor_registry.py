"""Where a launch's workloads run: the executors, by name (the contract:
radtrack/executor_contract.py; the executors themselves: radtrack/executors/).

``local`` runs them on this host, one after another; ``slurm`` submits one batch job per
workload (each job runs the local path for its workload on its node); a launch given
``--nodes/--node-rank/--master`` without ``--executor slurm`` is one node's part of a
multi-node run (radtrack/executors/multinode.py). ``--executor`` > ``$RADTRACK_EXECUTOR`` > ``local``.

A new executor is one module with a class following :class:`radtrack.executor_contract.Executor` and one
line in :data:`EXECUTORS` (docs/architecture.md, "Add an executor"). The entries are dotted
strings, imported only when asked for: the launch's parser and the sheet reader ask every
executor for its flags and row options, and an executor's own machinery (sbatch, a
rendezvous) loads only where it runs. The registry and the contract sit below the sheet
(its reader asks for the row options) and the executors above it (docs/architecture.md
"Floors"): no static import of radtrack.executors here.
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError

if TYPE_CHECKING:
    from radtrack.executor_contract import Enquiry, Executor, RowOption

#: name -> "module:attribute" of its Executor
EXECUTORS = {
    "local": "radtrack.executors.local:EXECUTOR",
    "slurm": "radtrack.executors.slurm_executor:EXECUTOR",
}
#: one node's part of a multi-node run (not a name --executor takes: --nodes picks it)
NODES = "radtrack.executors.multinode:EXECUTOR"
NAMES = tuple(EXECUTORS)
ENV = "RADTRACK_EXECUTOR"


def resolve(flag: str | None) -> str:
    """The executor to use: the flag, else $RADTRACK_EXECUTOR, else local."""
    name = (flag or os.environ.get(ENV) or "local").strip().lower()
    names = tuple(EXECUTORS)  # as registered now (a test may register one)
    if name not in names:
        where = "--executor" if flag else f"${ENV}"
        raise RadtrackError(f"{where}: unknown executor {name!r}; use one of {', '.join(names)}")
    return name


def load(entry: str) -> Executor:
    module, _, attribute = entry.partition(":")
    executor: Executor = getattr(importlib.import_module(module), attribute)
    return executor


def every() -> list[Executor]:
    """Every registered executor (the multi-node one included), in registration order."""
    return [load(e) for e in (*EXECUTORS.values(), NODES)]


def pick(args: argparse.Namespace) -> Executor:
    """The launch's executor, having refused the flags of any other; a local launch given
    ``--nodes``, ``--node-rank`` or ``--master`` is one node's part of a multi-node run."""
    name = resolve(args.executor)
    chosen = load(EXECUTORS[name])
    if name == "local" and any(getattr(args, n, None) is not None
                               for n in ("nodes", "node_rank", "master")):
        chosen = load(NODES)
    for other in every():
        if other.name == chosen.name:
            continue
        given = [f"--{n.replace('_', '-')}" for n in other.flags
                 if getattr(args, n, None) not in (None, False, [])]
        if given:
            raise RadtrackError(f"{', '.join(given)} only apply with --executor {other.name}")
    return chosen


def row_options() -> list[RowOption]:
    """Every executor's row options (the sheet reader reads their columns)."""
    return [o for e in every() for o in e.row_options]


def add_options(parser: argparse.ArgumentParser) -> None:
    """Every executor's flags, on the launch's parser."""
    for executor in every():
        executor.add_options(parser)


def control(action: str, enquiry: Enquiry, name: str | None = None) -> int | None:
    """``radtrack status|cancel SHEET``: ``action`` ("status" or "cancel") of the executor
    ``name`` (None: every executor in turn, those keeping their own record of a sheet, like
    SLURM's job ledger, before the local one, which reads the sheet's lock and cells); the
    first answer, or None where no executor ran anything of the sheet."""
    if name is not None:
        asked = [load(EXECUTORS[resolve(name)])]
    else:
        executors = every()
        asked = [e for e in executors if e.name != "local"] + [e for e in executors
                                                                if e.name == "local"]
    for executor in asked:
        code: int | None = getattr(executor, action)(enquiry)
        if code is not None:
            return code
    return None
