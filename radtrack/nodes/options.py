"""The addresses and environment of a multi-node row: ``--master``, the rendezvous' waits,
torch's ``env://`` variables."""

from __future__ import annotations

import os
import socket

from radtrack.errors import RadtrackError

DEFAULT_PORT = 29450
JOIN_WAIT_ENV = "RADTRACK_NODES_JOIN_S"  # how long node 0 waits for every node to join
JOIN_WAIT_S = 600.0


def parse_master(text: str) -> tuple[str, int]:
    """``HOST`` or ``HOST:PORT`` (``[v6]:PORT``) of ``--master``."""
    text = text.strip()
    host, port = text, DEFAULT_PORT
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            port = _port(rest.removeprefix(":"), text)
    elif text.count(":") == 1:
        host, p = text.split(":")
        port = _port(p, text)
    if not host:
        raise RadtrackError(f"--master {text!r}: no host (HOST or HOST:PORT)")
    return host, port


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise RadtrackError(f"--master {whole!r}: the port must be a number from 1 to 65535")
    return int(text)


def torch_env(node: int, nodes: int, addr: str, port: int) -> dict[str, str]:
    """The variables torch.distributed's ``env://`` rendezvous (and torchrun's scripts) read."""
    return {"MASTER_ADDR": addr, "MASTER_PORT": str(port), "WORLD_SIZE": str(nodes),
            "RANK": str(node), "NODE_RANK": str(node), "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1"}


def join_wait_s() -> float:
    text = os.environ.get(JOIN_WAIT_ENV, "").strip()
    try:
        return float(text) if text else JOIN_WAIT_S
    except ValueError:
        raise RadtrackError(f"${JOIN_WAIT_ENV}={text!r} is not a number of seconds") from None


def free_port(host: str) -> int:
    """A port no one listens on now (torch's rendezvous, MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, 0))
        except OSError:
            s.bind(("", 0))
        return int(s.getsockname()[1])
