"""Whether ``radtrack ui`` can listen where it is asked to, and if not, who listens there.

Checked before the page prints its address: Flask would print "Running on ..." and then
exit 1 on a port in use, and the browser would show whatever else listens there.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

_PROC = Path("/proc")


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (naming the process that holds it where
    /proc tells), or None when it is free."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"--host {host}: {exc.strerror}"
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # as werkzeug binds: an old connection in TIME_WAIT does not count as taken
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            holder = port_holder(port)
            return (f"port {port} on {host} is already in use"
                    + (f" by {holder}" if holder else "")
                    + "; stop it or pass another --port")
    return None


def port_holder(port: int, proc: Path = _PROC) -> str | None:
    """'pid 1234 (python -m http.server 8050)' for the process listening on TCP ``port``,
    from /proc/net/tcp{,6} and the processes' open sockets; None when not found (another
    user's process, or no /proc)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local address "0100007F:1F72", state 0A = LISTEN, inode in column 10
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            for fd in (pid_dir / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return f"pid {pid_dir.name} ({_command(pid_dir)})"
        except OSError:
            continue
    return None


def _command(pid_dir: Path) -> str:
    try:
        raw = (pid_dir / "cmdline").read_bytes()
    except OSError:
        return "?"
    text = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    return text if len(text) <= 120 else text[:117] + "..."
