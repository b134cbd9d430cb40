"""The multi-node launch's side of the executor contract (radtrack/executor_contract.py):
``radtrack --nodes N --node-rank K --master HOST[:PORT] script.py``, started by hand on each
node, is one node's part of one run (radtrack/nodes/launch.py).

Light to import: the launch's parser asks it for its flags; the rendezvous and the node's
launcher load only when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from radtrack import inputs
from radtrack.errors import RadtrackError
from radtrack.executor_contract import Enquiry, Launch, RowOption
from radtrack.spec import RunSpec


class NodesExecutor:
    """One node's part of a run over several nodes; picked by ``--nodes``/``--node-rank``/
    ``--master`` on a local launch (radtrack/executor_registry.py ``pick``)."""

    name = "nodes"
    flags: tuple[str, ...] = ()  # --nodes is the SLURM executor's row option too
    row_options: tuple[RowOption, ...] = ()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        n = parser.add_argument_group("multi-node (one run over several nodes; docs/sheets.md)")
        n.add_argument("--nodes", type=inputs.argument(inputs.integer), default=None,
                       metavar="N",
                       help="run the script as one run over N nodes: started by hand on each "
                            "node with --node-rank and --master; with --executor slurm, every "
                            "row of the sheet as one job over N nodes (a Nodes cell wins)")
        n.add_argument("--node-rank", type=inputs.argument(inputs.integer), default=None,
                       metavar="K", help="this node's rank, 0..N-1; node 0 creates the run and "
                                         "hosts the rendezvous")
        n.add_argument("--master", default=None, metavar="HOST[:PORT]",
                       help="node 0's host as every node reaches it (MASTER_ADDR) and "
                            "radtrack's rendezvous port there (default 29450)")

    def why_end_waits(self, asked: bool) -> str | None:
        return ""  # node 0 waits for every node's end (radtrack/nodes/launch.py)

    def check(self, launch: Launch) -> None:
        from radtrack.nodes.launch import check

        a = launch.args
        check(a.nodes, a.node_rank, a.master, a.collocation)
        if launch.sheet:
            raise RadtrackError("--nodes/--node-rank/--master run one script on each node by "
                                "hand; a sheet's rows go over nodes with --executor slurm")

    def check_rows(self, specs: list[RunSpec], sheet: Path | None) -> None:
        pass  # one script's row: check() covered its options

    def submit(self, launch: Launch) -> int:
        from radtrack.executors.local import prepare
        from radtrack.nodes.launch import launch as launch_node

        workloads = prepare(launch)
        if workloads is None:
            return 0
        a = launch.args
        return launch_node(workloads[0][0], launch.store, a.grace, a.nodes, a.node_rank, a.master)

    # status and cancel address a sheet; a multi-node launch runs one script, never a
    # sheet (check() refuses one), so it has nothing of any sheet to report or stop: its
    # run is stopped by Ctrl-C in node 0's terminal, which ends every node's part
    # (radtrack/nodes/launch.py), and its status is its run's in the store

    def status(self, enquiry: Enquiry) -> int | None:
        return None

    def cancel(self, enquiry: Enquiry) -> int | None:
        return None


EXECUTOR = NodesExecutor()
