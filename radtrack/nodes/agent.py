"""Node K >= 1 of a multi-node row: its part of the script, with its own listeners and spool,
into the run node 0 created.

The agent joins node 0's rendezvous (rendezvous.py: its clock offset measured there), waits
for the start, starts its script as node 0 does (held at a barrier, released, listeners
following its process tree: radtrack/run/start.py), with a sink whose keys are node-scoped
and whose times are on node 0's clock (sink.py). The run's id comes over the rendezvous
once node 0 made it: the sink binds to it and ships what it spooled. At the end it stores
its traces and summaries (``telemetry/node<K>.<listener>.parquet``, ``summary/node<K>/...``),
its output log (``logs/node<K>/output.log``) and environment (``environment/node<K>/``),
never the run's status: it reports its end to node 0, whose launcher decides it
(outcome.py). Killed, it leaves its spool (``meta.json`` names the run once it was bound):
``radtrack sync`` on this node stores it, under the same node-scoped names.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.nodes.options import join_wait_s, torch_env
from radtrack.nodes.outcome import energy_of
from radtrack.nodes.rendezvous import NodeEnd, NodeLink
from radtrack.nodes.sink import NodeSink
from radtrack.run.rows import Interrupt, Row
from radtrack.run.start import say
from radtrack.script import env as renv
from radtrack.spec import RunSpec
from radtrack.vocab import schema

if TYPE_CHECKING:
    from radtrack.store.handle import StoreHandle


def run_node(spec: RunSpec, store: StoreHandle, grace: float, node: int, nodes: int, host: str,
             port: int) -> int:
    """Join, run this node's part, report its end; 0 when the part finished."""
    try:
        link = NodeLink.join(host, port, node, nodes, join_wait_s())
    except KeyboardInterrupt:
        say(f"node {node}: interrupted before it joined node 0; nothing ran")
        return 130
    c = link.clock
    say(f"node {node} of {nodes}: joined {host}:{port}; clock offset to node 0 "
        f"{c.offset_s * 1000:+.3f} ms (± {c.error_s * 1000:.3f} ms)")
    interrupt = Interrupt()
    old = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}

    def stop(why: str) -> None:
        say(f"node {node}: {why}: stopping")
        interrupt.event.set()

    link.on_stop = stop
    try:
        while not link.started.wait(0.2):
            if interrupt.event.is_set():
                link.close()  # node 0 lets it join again until the start (rendezvous.py)
                say(f"node {node}: stopped before the start; nothing ran (start it again to "
                    "rejoin while node 0 waits for the other nodes)")
                return 130
        if link.aborted or link.lost or not link.start_info:
            raise RadtrackError(f"node {node}: {link.aborted or 'node 0 went away before the start'}")
        spec.env = {**spec.env, **torch_env(node, nodes, host, int(link.start_info["master_port"]))}
        end = NodePart(spec, store, grace, node, link).run(interrupt)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if link.report(end):
        say(f"node {node}: {end.status} (exit {end.exit_code}); reported to node 0")
    else:
        say(f"node {node}: {end.status} (exit {end.exit_code}); node 0 did not take the report "
            "(it is gone): its run's status is left to `radtrack sync` on node 0's host")
    link.close()
    return 0 if end.status == "FINISHED" else 1


class NodePart:
    """One node's script, listeners and sink, as radtrack/run/launch.py runs a row, minus the
    run's creation and end (node 0's)."""

    def __init__(self, spec: RunSpec, store: StoreHandle, grace: float, node: int,
                 link: NodeLink):
        from radtrack.run.experiment import resolve_listeners
        from radtrack.run.start import command_for
        from radtrack.store.runs import row_params

        self.spec, self.grace, self.node, self.link = spec, grace, node, link
        self.store, self.uri = store, store.uri  # the command's handle (store/handle.py)
        samplers, wrappers, ltags = resolve_listeners(spec)
        key = uuid.uuid4().hex
        self.row = Row(spec=spec, key=key, env={}, listeners=samplers, wrappers=wrappers,
                       folder=renv.radtrack_home() / "runs" / key, record_tags=ltags,
                       params=row_params(spec, samplers + [w.name for w in wrappers],
                                         command_for(spec.file, spec.args)))
        self.bound = threading.Event()
        self.client = None

    def run(self, interrupt: Interrupt) -> NodeEnd:
        from radtrack.placement import WorkloadPlacement
        from radtrack.run.envcapture import capture_in_background
        from radtrack.run.experiment import process_env
        from radtrack.run.launch import script_env
        from radtrack.run.row_end import end_row
        from radtrack.run.start import (
            abort,
            check_listeners,
            release,
            spawn_rows,
            start_row_listeners,
        )
        from radtrack.run.supervise import supervise

        row = self.row
        spool_root = renv.radtrack_home() / "spool"
        run_dir = renv.radtrack_home() / "runs" / uuid.uuid4().hex
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            with WorkloadPlacement([self.spec], run_dir, log=say) as placement:
                row.env = process_env(row, self.uri, placement.env_for(self.spec))
                row.record_tags.update(placement.tags_for(self.spec))
                row.env.update(script_env(spool_root / row.key))
                barrier: list[int] = []
                try:
                    barrier = spawn_rows([row], self.grace, spool_root)
                    assert row.sink is not None
                    NodeSink.adopt(row.sink, self.node, self.link.clock.offset_s)
                    check_listeners(row)
                    if not self.spec.manual:
                        row.started = time.time()
                except BaseException:
                    abort([row], barrier)
                    raise
                released = release(barrier)
                if not self.spec.manual:
                    start_row_listeners(row)
                threading.Thread(target=self._bind, name="radtrack-node-bind", daemon=True).start()
                env_thread = capture_in_background(row.folder / schema.ENVIRONMENT_DIR)
                supervise([row], interrupt.event, released)
                end_row(row)
        except Exception as exc:  # placement refused, the script could not start
            say(f"node {self.node}: could not run its part: {exc}")
            return NodeEnd(self.node, socket.gethostname(), "FAILED", None, "",
                           tags={schema.node_tag(self.node, schema.ERROR): str(exc)[:2000]})
        return self._store(env_thread)

    def _bind(self) -> None:
        """Once node 0 hands the run over: bind the sink (it ships what it spooled) and tell
        the script (RADTBenchmark on this node logs into the same run)."""
        from radtrack.script import handshake
        from radtrack.store.outage import describe

        self.link.has_run.wait()
        run = self.link.run
        if not run.get("run_id"):
            return
        row = self.row
        row.run_id = run["run_id"]
        try:
            handshake.publish(row.folder, **{handshake.RUN_ID: row.run_id,
                                             handshake.EXPERIMENT_ID: run.get("experiment_id", "")})
        except OSError:
            pass
        try:
            self.client = self.store.mlflow  # MLflow's own, as before: artifacts
            assert row.sink is not None
            row.sink.bind(self.client, row.run_id, self.uri)
        except Exception as exc:  # noqa: BLE001 - the spool keeps everything: said at the end
            say(f"node {self.node}: could not open the tracking store ({describe(exc)})")
            return
        self.bound.set()

    def _store(self, env_thread: threading.Thread) -> NodeEnd:
        """The part's traces, summaries, log and environment into the run; its end for node 0."""
        from radtrack.run.record import host_tags
        from radtrack.store.outage import describe, wait_s

        row = self.row
        assert row.sink is not None
        offset = self.link.clock.offset_s
        deadline = time.monotonic() + wait_s()
        while not self.bound.wait(0.2) and time.monotonic() < deadline and not self.link.lost:
            pass
        stored = self.bound.is_set() and row.sink.close(
            retry_for=max(0.0, deadline - time.monotonic()), remove=False)
        if stored:
            try:
                self._artifacts(env_thread)
                row.sink.remove()
            except Exception as exc:  # noqa: BLE001 - the samples are stored; the files stay here
                say(f"node {self.node}: its output log and environment were not stored "
                    f"({describe(exc)}); they stay in {row.folder}")
        else:
            if not self.bound.is_set():
                row.sink.close(retry_for=0, remove=False)  # its run never came: files closed
            say(f"node {self.node}: samples kept in {row.sink.dir}: run `radtrack sync` on this "
                "node once the store is reachable")
        tags = {**row.record_tags, **host_tags(say), **row.tags}
        tags.pop(schema.EXIT_CODE, None)  # the node's exit code is outcome's to tag
        return NodeEnd(self.node, socket.gethostname(), row.status, row.exit_code,
                       row.stopped_by, row.started + offset, (row.ended or time.time()) + offset,
                       energy_of(row.sink.frames) if stored else None, bool(stored),
                       str(row.sink.dir), {schema.node_tag(self.node, k): str(v)
                                           for k, v in tags.items() if k.startswith(schema.TAG_PREFIX)})

    def _artifacts(self, env_thread: threading.Thread) -> None:
        assert self.client is not None
        row, scope = self.row, schema.node_scope(self.node)
        log = row.folder / schema.LOG_FILE
        if log.exists():
            self.client.log_artifact(row.run_id, str(log), f"{schema.LOGS_DIR}/{scope}")
        env_thread.join(timeout=60)
        env = row.folder / schema.ENVIRONMENT_DIR
        if env.is_dir():
            self.client.log_artifacts(row.run_id, str(env), f"{schema.ENVIRONMENT_DIR}/{scope}")
        profiles = row.folder / schema.PROFILES_DIR
        if profiles.is_dir() and any(profiles.iterdir()):
            self.client.log_artifacts(row.run_id, str(profiles), f"{schema.PROFILES_DIR}/{scope}")

