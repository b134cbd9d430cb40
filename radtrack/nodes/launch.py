"""``radtrack --nodes N --node-rank K --master HOST[:PORT] script.py ...``: one node's part of
a multi-node row (docs/sheets.md#multi-node-rows).

Node 0 is the launcher as on one node (its run, its listeners, its end step) that first
hosts the rendezvous (rendezvous.py) and waits for nodes 1..N-1 to join; every other node
runs agent.py. Each node's script gets what torch's ``env://`` initialisation reads:
``MASTER_ADDR`` (the ``--master`` host), ``MASTER_PORT`` (a free port node 0 picks, or
node 0's own ``$MASTER_PORT``), ``WORLD_SIZE`` = N, ``RANK`` = ``NODE_RANK`` = K,
``LOCAL_RANK`` = 0, ``LOCAL_WORLD_SIZE`` = 1: one process per node, which may start its own
per-GPU workers (then its global ranks are its own business, from ``NODE_RANK``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.nodes import outcome
from radtrack.nodes.options import free_port, join_wait_s, parse_master, torch_env
from radtrack.nodes.rendezvous import Master, NodeEnd
from radtrack.run.start import say
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.run.rows import Row
    from radtrack.spec import RunSpec
    from radtrack.store.handle import StoreHandle

STOP_WAIT_S = 60.0  # past the grace: how long node 0 waits for stopped nodes' ends


def check(nodes: int | None, node: int | None, master: str | None,
          collocation: str = "-") -> tuple[str, int] | None:
    """The ``--nodes/--node-rank/--master`` options checked together: None for a one-node
    launch, else the master's (host, port)."""
    if nodes is None and node is None and master is None:
        return None
    if nodes is None or node is None or master is None:
        raise RadtrackError("--nodes, --node-rank and --master go together: --nodes N "
                            "--node-rank K --master HOST[:PORT] on each of the N nodes")
    if nodes < 1:
        raise RadtrackError(f"--nodes must be >= 1, got {nodes}")
    if not 0 <= node < nodes:
        raise RadtrackError(f"--node-rank must be 0..{nodes - 1} with --nodes {nodes}, got {node}")
    if collocation.strip() not in ("", "-"):
        raise RadtrackError(f"--collocation {collocation}: a multi-node row runs plain "
                            "(one script per node on its Devices)")
    return parse_master(master)


def launch(spec: RunSpec, store: StoreHandle, grace: float, nodes: int, node: int,
           master: str) -> int:
    """Run this node's part; node 0 returns the run's exit code (0: every node finished)."""
    host, port = parse_master(master)
    if node:
        from radtrack.nodes.agent import run_node

        return run_node(spec, store, grace, node, nodes, host, port)
    return run_master(spec, store, grace, nodes, host, port)


def run_master(spec: RunSpec, store: StoreHandle, grace: float, nodes: int, host: str,
               port: int) -> int:
    from radtrack.run.experiment import run_workloads

    master = Master(host, port, nodes, say)
    try:
        if nodes > 1:
            say(f"node 0 of {nodes}: waiting for node(s) 1..{nodes - 1} on {host}:{port}")
        try:
            master.wait_joined(join_wait_s())
        except KeyboardInterrupt:
            master.broadcast(op="abort", why="node 0 was interrupted before the start")
            say("interrupted before every node joined; nothing ran")
            return 130
        torch_port = int(os.environ.get("MASTER_PORT") or free_port(host))
        master.start(master_addr=host, master_port=torch_port)
        spec.env = {**spec.env, **torch_env(0, nodes, host, torch_port)}
        hooks = MasterHooks(master, nodes, grace)
        # one row: its end reads no stored runs back (no co-location figures)
        code = run_workloads([[spec]], store, grace, nodes=hooks, read_stored=None)
        if not hooks.done:  # node 0's part never ran (placement refused, ...): stop the rest
            master.broadcast(op="stop", why="node 0 could not run its part")
        hooks.store_figures(store, spec)
        return code
    finally:
        master.close()


class MasterHooks:
    """Node 0's hooks into its launch (radtrack/run/rows.py ``NodeHooks``): hands the run to
    the other nodes once it exists; at the end, their ends decide the row's status."""

    def __init__(self, master: Master, nodes: int, grace: float):
        self.master, self.nodes, self.grace = master, nodes, grace
        self.rows: list[Row] = []
        self.ends: dict[int, NodeEnd | str] = {}
        self.done = False
        self.stopped_at: float | None = None  # when node 0's launcher was stopped (wall clock)
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def rows_made(self, rows: list[Row]) -> None:
        self.rows = rows
        for row in rows:
            row.record_tags[schema.NODES] = str(self.nodes)
            row.record_tags.update(outcome.clock_tags(self.master.clocks()))
            row.record_tags.update({schema.node_tag(n, "host"): h
                                    for n, h in self.master.hosts().items()})
        threading.Thread(target=self._hand_run, args=(rows[0],), daemon=True,
                         name="radtrack-nodes-run").start()
        threading.Thread(target=self._pass_stop, args=(rows[0],), daemon=True,
                         name="radtrack-nodes-stop").start()

    def _pass_stop(self, row: Row) -> None:
        """Node 0's launcher stopped (Ctrl-C, SIGTERM): the other nodes are told at once, so
        their parts stop with node 0's rather than after it (when a rank of a distributed
        script may already have died of its peer's end)."""
        while not self._stop.is_set() and row.stopped_by != "signal":
            self._stop.wait(0.05)
        if row.stopped_by == "signal":
            self._broadcast_stop()

    def _broadcast_stop(self) -> None:
        with self._lock:
            if self.stopped_at is not None:
                return
            self.stopped_at = time.time()
        self.master.broadcast(op="stop", why="node 0's launcher was stopped")

    def _hand_run(self, row: Row) -> None:
        """The row run's id, as the recorder publishes it to the script (ids.json), to every
        node: they bind their sinks to it."""
        from radtrack.script import handshake

        while not self._stop.is_set():
            ids = handshake.read(row.folder)
            if ids.get(handshake.RUN_ID):
                self.master.broadcast(op="run", run_id=ids[handshake.RUN_ID],
                                      experiment_id=ids.get(handshake.EXPERIMENT_ID, ""))
                return
            self._stop.wait(0.05)

    def ended(self, rows: list[Row]) -> None:
        import socket

        self.done = True
        row = rows[0]
        stopping_at: float | None = None
        if row.stopped_by == "signal":
            self._broadcast_stop()
            stopping_at = time.monotonic() + self.grace * 3 + STOP_WAIT_S
            say(f"waiting up to {stopping_at - time.monotonic():.0f} s for the other nodes to stop")
        elif self.nodes > 1:
            say(f"node 0 done ({row.status}); waiting for the other nodes' ends")
        others = self.master.wait_ends(
            lambda: stopping_at is not None and time.monotonic() > stopping_at)
        self._stop.set()
        mine = NodeEnd(0, socket.gethostname(), row.status, row.exit_code, row.stopped_by,
                       row.started, row.ended)
        self.ends = {0: mine, **others}
        status, tags = outcome.decide(self.ends, self.stopped_at)
        if status != row.status:
            say(f"{row.name}: {status}: {tags.get(schema.NODES_FAILED, '')}")
        row.status = status
        row.tags.update(tags)

    def store_figures(self, store: StoreHandle, spec: RunSpec) -> None:
        """``summary/node<K>/...`` and ``summary/nodes/...`` on the row run, once node 0's own
        traces are stored (its energy is in them)."""
        if not self.rows or not self.ends or not self.rows[0].run_id:
            return
        from radtrack.postrun.footprint import resolve
        from radtrack.store.outage import describe, retrying, wait_s

        row = self.rows[0]
        mine = self.ends[0]
        if isinstance(mine, NodeEnd) and row.sink is not None:
            mine.energy_j = outcome.energy_of(row.sink.frames)
        carbon = resolve(spec.carbon_intensity, spec.pue, spec.carbon_source)
        values = outcome.figures(self.ends, None if carbon is None else carbon.co2e_g(1.0))
        if not values:
            return
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, 0) for k, v in values.items()]
        try:
            retrying(lambda: store.mlflow.log_batch(row.run_id, metrics=metrics),
                     time.monotonic() + wait_s())
        except Exception as exc:  # noqa: BLE001 - figures of what is stored: said, not fatal
            say(f"{row.name}: the per-node figures could not be stored ({describe(exc)})")
            return
        parts = ", ".join(f"node{n} {v:.1f} s" for n in sorted(self.ends)
                          if (v := values.get(schema.node_summary_key(n, "duration_s"))) is not None)
        total = values.get(schema.nodes_total_key("gpu_energy_j"))
        say(f"{row.name}: {len(self.ends)} nodes: {parts}"
            + (f"; GPU energy {total:.0f} J in all" if total is not None else ""))
