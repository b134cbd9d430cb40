"""The sink of node K >= 1 of a multi-node row: its listeners' lines, node-scoped, on the
master's clock, before anything is spooled.

Node K's ``top/cpu_pct`` is spooled (and so stored, traced and summarized) as
``node<K>/top/cpu_pct`` in the stream ``node<K>.top`` (radtrack/vocab/schema.py
``node_scoped``, ``node_stream``), its timestamps shifted by the node's measured clock
offset to the master (rendezvous.py): the spool then holds exactly what the run gets, and
``radtrack sync`` on the node ships a dead agent's spool under the same names with no
knowledge of nodes. The caller gets the listener's own message back (its restart
positions are the listener's, unscoped).
"""

from __future__ import annotations

from dataclasses import replace

from radtrack.listeners.protocol import Hello, Message, Sample, Samples, decode_line, encode
from radtrack.store.sink import Sink
from radtrack.vocab.schema import node_scoped, node_stream


def scoped(msg: Message, node: int, offset_s: float) -> Message:
    """``msg`` as node ``node`` stores it: metric keys scoped, times on the master's clock."""
    if type(msg) is Sample:
        return Sample(msg.t + offset_s, {node_scoped(k, node): v for k, v in msg.values.items()},
                      msg.resume, msg.listener)
    if type(msg) is Samples:
        return Samples([t + offset_s for t in msg.t],
                       {node_scoped(k, node): v for k, v in msg.values.items()},
                       msg.resume, msg.listener)
    if type(msg) is Hello:
        metrics = [{**m, "key": node_scoped(str(m["key"]), node)} if "key" in m else m
                   for m in msg.metrics]
        return replace(msg, metrics=metrics)
    return msg


class NodeSink(Sink):
    """A :class:`Sink` whose intake scopes every line to one node (see the module)."""

    node: int
    offset_s: float

    @classmethod
    def adopt(cls, sink: Sink, node: int, offset_s: float) -> NodeSink:
        """``sink`` (unbound, nothing fed yet: made by radtrack/run/start.py) scoping from now on."""
        if sink.spool.streams:
            raise ValueError("a node's sink must scope its lines from the first one")
        sink.__class__ = cls
        assert isinstance(sink, NodeSink)
        sink.node, sink.offset_s = node, offset_s
        return sink

    def feed(self, listener: str, line: str, msg: Message | None = None) -> Message | None:
        line = line.strip()
        if not line:
            return None
        if msg is None:
            line, msg = decode_line(line)
        mine = scoped(msg, self.node, self.offset_s)
        self.spool.append(node_stream(listener, self.node), encode(mine) if mine is not msg else line,
                          mine)
        return msg

    def hello(self, listener: str) -> Hello | None:
        return self.spool.hello(node_stream(listener, self.node))

    def emitted(self, listener: str) -> int:
        return self.spool.emitted(node_stream(listener, self.node))
