"""The rendezvous of a multi-node row: node 0's launcher (the master) and each other node's
agent, one TCP connection each, one JSON object a line.

    node -> master   {"op": "join", "node": K, "nodes": N, "host": H}
    master -> node   {"op": "welcome"} | {"op": "refused", "why": ...}
    node -> master   {"op": "ping", "t1": T}   (CLOCK_ROUNDS times, before anything runs)
    master -> node   {"op": "pong", "t1": T, "t2": T, "t3": T}
    node -> master   {"op": "clock", "offset_s": O, "error_s": E}
    master -> node   {"op": "start", "master_addr": A, "master_port": P}  (every node joined)
                     {"op": "abort", "why": ...}                        (one never joined)
    master -> node   {"op": "run", "run_id": R, "experiment_id": X}       (the run exists)
    master -> node   {"op": "stop", "why": ...}                          (the launch stops)
    node -> master   {"op": "end", ...}   (its part ended: NodeEnd's fields)
    master -> node   {"op": "ack"}

A node whose connection closes (or whose host stops answering TCP keepalives) before it
sent its end is lost: the run records which node and why (outcome.py).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from radtrack.errors import RadtrackError
from radtrack.nodes.clock import CLOCK_ROUNDS, Clock, clock_from
from radtrack.nodes.options import JOIN_WAIT_ENV


@dataclass
class NodeEnd:
    """How one node's part ended, as its agent reports it (times on the master's clock)."""

    node: int
    host: str = ""
    status: str = ""  # FINISHED | FAILED | KILLED
    exit_code: int | None = None
    stopped_by: str = ""
    started: float = 0.0
    ended: float = 0.0
    energy_j: float | None = None  # its GPUs' counters, when it had any
    stored: bool = True  # its samples are in the store (else its spool keeps them)
    spool: str = ""  # where, when not
    tags: dict[str, str] = field(default_factory=dict)  # node-scoped (radtrack.node<K>.*)


def _keepalive(sock: socket.socket) -> None:
    """A dead host (no FIN, no RST) is noticed in about 25 s rather than never."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


class _Line:
    """One connection's JSON lines, sent whole under a lock (two threads may send)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.reader = sock.makefile("r", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()

    def send(self, **msg: Any) -> bool:
        data = (json.dumps(msg) + "\n").encode()
        with self._lock:
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                return False

    def recv(self) -> dict[str, Any] | None:
        """The next message; None once the connection closed (or sent garbage)."""
        try:
            line = self.reader.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        return msg if isinstance(msg, dict) else None

    def close(self) -> None:
        # shutdown first: a thread blocked reading this connection sees its end and lets go
        # of the reader (closing the reader under it would wait for it forever)
        for f in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                f()
            except OSError:
                pass


@dataclass
class _Peer:
    node: int
    host: str
    line: _Line
    clock: Clock | None = None
    end: NodeEnd | None = None
    lost: str = ""  # why it is gone without an end


class Master:
    """Node 0's side: listens, admits nodes 1..N-1 once each (again, one that left before the
    start), answers their clock pings,
    tells them to start, the run id, to stop; collects how each node's part ended."""

    def __init__(self, host: str, port: int, nodes: int, log: Callable[[str], None]):
        self.host, self.port, self.nodes, self.log = host, port, nodes, log
        self.peers: dict[int, _Peer] = {}
        self.began = False  # the start was sent: from then on a node that leaves is lost
        self._cond = threading.Condition()
        self._closed = False
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            try:
                self.sock.bind((host, port))
            except OSError:  # a name of this host that is not one of its addresses
                self.sock.bind(("", port))
        except OSError as exc:
            self.sock.close()
            raise RadtrackError(f"--master {host}:{port}: cannot listen there for the other "
                                f"nodes ({exc}); pick another port (HOST:PORT)") from None
        self.sock.listen(max(8, nodes))
        self._acceptor = threading.Thread(target=self._accept, name="radtrack-nodes", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            _keepalive(conn)
            threading.Thread(target=self._serve, args=(_Line(conn),), daemon=True,
                             name="radtrack-node-peer").start()

    def _serve(self, line: _Line) -> None:
        hello = line.recv()
        peer = self._admit(line, hello)
        if peer is None:
            line.close()
            return
        while True:
            msg = line.recv()
            if msg is None:
                break
            op = msg.get("op")
            if op == "ping":
                t2 = time.time()
                line.send(op="pong", t1=msg.get("t1"), t2=t2, t3=time.time())
            elif op == "clock":
                with self._cond:
                    peer.clock = Clock(float(msg["offset_s"]), float(msg["error_s"]))
                    self._cond.notify_all()
            elif op == "end":
                fields = {k: v for k, v in msg.items() if k in NodeEnd.__dataclass_fields__}
                with self._cond:
                    peer.end = NodeEnd(**{**fields, "node": peer.node})
                    self._cond.notify_all()
                line.send(op="ack")
        with self._cond:
            if peer.end is None and not peer.lost:
                if not self.began:  # nothing ran yet: the node may join again (_admit)
                    peer.lost = "lost before the start: it may join again"
                    self.log(f"node {peer.node} ({peer.host}) left before the start; it may "
                             "join again until every node has joined")
                else:
                    peer.lost = ("lost: its agent's connection to the master closed before "
                                 "it reported an end (host down, agent killed, network cut)")
                    self.log(f"node {peer.node} ({peer.host}) {peer.lost}")
            self._cond.notify_all()

    def _admit(self, line: _Line, hello: dict[str, Any] | None) -> _Peer | None:
        if not hello or hello.get("op") != "join":
            return None
        node, nodes = hello.get("node"), hello.get("nodes")
        why = ""
        if nodes != self.nodes:
            why = f"this launch runs on {self.nodes} nodes, the agent was started with --nodes {nodes}"
        elif not isinstance(node, int) or not 0 < node < self.nodes:
            why = f"--node-rank {node}: must be 1..{self.nodes - 1} (node 0 is the master)"
        with self._cond:
            if not why and node in self.peers:
                old = self.peers[node]
                if old.lost and not self.began:  # it left before the start: back again
                    self.log(f"node {node} joins again (from {hello.get('host')})")
                else:
                    why = f"node {node} already joined (from {old.host})"
            if why:
                line.send(op="refused", why=why)
                self.log(f"refused a node agent from {hello.get('host')}: {why}")
                return None
            peer = self.peers[node] = _Peer(node, str(hello.get("host") or "?"), line)
            self._cond.notify_all()
        line.send(op="welcome")
        return peer

    def wait_joined(self, timeout: float) -> None:
        """Until every node joined and sent its clock; RadtrackError naming those that did not."""
        deadline = time.monotonic() + timeout
        others = set(range(1, self.nodes))
        with self._cond:
            while True:
                ready = {n for n, p in self.peers.items() if p.clock is not None and not p.lost}
                if ready >= others:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 1.0))
        missing = ", ".join(str(n) for n in sorted(others - ready))
        why = (f"node(s) {missing} did not join {self.host}:{self.port} within {timeout:.0f} s "
               f"(${JOIN_WAIT_ENV}); start `radtrack --nodes {self.nodes} --node-rank K --master "
               f"{self.host}:{self.port} ...` on each")
        self.broadcast(op="abort", why=why)
        raise RadtrackError(why)

    def start(self, **msg: Any) -> None:
        """Tell every node to start: from now on a node that leaves is lost, not let back."""
        with self._cond:
            self.began = True
        self.broadcast(op="start", **msg)

    def broadcast(self, **msg: Any) -> None:
        with self._cond:
            peers = list(self.peers.values())
        for peer in peers:
            peer.line.send(**msg)

    def clocks(self) -> dict[int, Clock]:
        with self._cond:
            return {n: p.clock for n, p in self.peers.items() if p.clock is not None}

    def hosts(self) -> dict[int, str]:
        with self._cond:
            return {n: p.host for n, p in self.peers.items()}

    def wait_ends(self, give_up: Callable[[], bool]) -> dict[int, NodeEnd | str]:
        """Each other node's end, or why it has none (lost); waits while any node is still
        connected without an end, until ``give_up()`` says to stop (then: "no end reported")."""
        with self._cond:
            while True:
                waiting = [p for p in self.peers.values() if p.end is None and not p.lost]
                if not waiting:
                    break
                if give_up():
                    for p in waiting:
                        p.lost = "no end reported: the master stopped waiting for it"
                    break
                self._cond.wait(0.2)
            return {n: (p.end if p.end is not None else p.lost) for n, p in self.peers.items()}

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self._cond:
            peers = list(self.peers.values())
        for peer in peers:
            peer.line.close()


class NodeLink:
    """A node agent's side: joins, measures its clock against the master's, then hears about
    the start, the run and a stop while its part runs, and reports its end."""

    def __init__(self, line: _Line, node: int):
        self.line, self.node = line, node
        self.clock = Clock(0.0, 0.0)
        self.start_info: dict[str, Any] = {}
        self.run: dict[str, str] = {}
        self.aborted = ""
        self.lost = False  # the master's connection closed
        self.started = threading.Event()
        self.has_run = threading.Event()
        self.on_stop: Callable[[str], None] = lambda why: None
        self._ack = threading.Event()
        self.acked = False

    @classmethod
    def join(cls, host: str, port: int, node: int, nodes: int, timeout: float) -> NodeLink:
        """Connect (retrying while the master is not up yet), join, measure the clock."""
        deadline = time.monotonic() + timeout
        last: OSError | None = None
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=5)
                break
            except OSError as exc:
                last = exc
                if time.monotonic() >= deadline:
                    raise RadtrackError(f"--master {host}:{port}: no master there within "
                                        f"{timeout:.0f} s ({last}); start node 0 (--node-rank 0) "
                                        "on that host") from None
                time.sleep(0.2)
        sock.settimeout(None)
        _keepalive(sock)
        line = _Line(sock)
        line.send(op="join", node=node, nodes=nodes, host=socket.gethostname())
        answer = line.recv()
        if not answer or answer.get("op") != "welcome":
            line.close()
            why = (answer or {}).get("why") or "the connection closed"
            raise RadtrackError(f"--master {host}:{port} refused node {node}: {why}")
        link = cls(line, node)
        rounds = []
        for _ in range(CLOCK_ROUNDS):
            t1 = time.time()
            line.send(op="ping", t1=t1)
            pong = line.recv()
            t4 = time.time()
            if not pong or pong.get("op") != "pong":
                line.close()
                raise RadtrackError(f"--master {host}:{port}: the connection closed while "
                                    "measuring the clock")
            rounds.append((t1, float(pong["t2"]), float(pong["t3"]), t4))
        link.clock = clock_from(rounds)
        line.send(op="clock", offset_s=link.clock.offset_s, error_s=link.clock.error_s)
        threading.Thread(target=link._read, name="radtrack-node-link", daemon=True).start()
        return link

    def _read(self) -> None:
        while True:
            msg = self.line.recv()
            if msg is None:
                self.lost = True
                self.started.set()
                self.has_run.set()
                self._ack.set()
                return
            op = msg.get("op")
            if op == "start":
                self.start_info = msg
                self.started.set()
            elif op == "abort":
                self.aborted = str(msg.get("why") or "aborted")
                self.started.set()
            elif op == "run":
                self.run = {k: str(v) for k, v in msg.items() if k != "op"}
                self.has_run.set()
            elif op == "stop":
                self.on_stop(str(msg.get("why") or "the master stopped"))
            elif op == "ack":
                self.acked = True
                self._ack.set()

    def report(self, end: NodeEnd, timeout: float = 30.0) -> bool:
        """Send the end; True once the master took it."""
        if self.lost or not self.line.send(op="end", **asdict(end)):
            return False
        self._ack.wait(timeout)
        return self.acked

    def close(self) -> None:
        self.line.close()
