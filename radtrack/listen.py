"""Listener subprocesses of one run: start, readiness, restart with backoff, stop.

Each listener is ``python -m radtrack.listeners NAME ...`` in its own process group, so
a crash or hang never touches the workload; its JSON lines go straight into the sink.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from radtrack.procs import set_parent_death_signal
from radtrack.sink import Sink

MAX_RESTARTS = 3
READY_TIMEOUT_S = 20.0


class ListenerProc:
    def __init__(self, name: str, sink: Sink, interval: float, devices: list[str], pid: int,
                 outdir: Path, env: dict[str, str]):
        self.name = name
        self.sink = sink
        self.argv = [sys.executable, "-m", "radtrack.listeners", name, "--interval", str(interval),
                     "--devices", "+".join(devices), "--pid", str(pid), "--outdir", str(outdir)]
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.reader: threading.Thread | None = None
        self.ready = threading.Event()
        self.restarts = 0
        self.next_restart: float | None = None
        self.failure = ""  # last reason it died
        self.stopping = False
        self.gave_up = False
        # source-stamped samples (smi's driver power buffer): where a restart picks up
        self.resume: dict[str, int] = {}

    def start(self) -> None:
        self.ready.clear()
        argv = [*self.argv, "--resume", json.dumps(self.resume)] if self.resume else self.argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=self.env,
                                     start_new_session=True, preexec_fn=set_parent_death_signal)
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True,
                                       name=f"listener-{self.name}")
        self.reader.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            msg = self.sink.feed(self.name, line)
            if msg is None:
                continue
            if msg.get("type") == "hello":
                self.ready.set()
            elif msg.get("type") == "sample" and isinstance(msg.get("resume"), dict):
                self.resume.update(msg["resume"])
            elif msg.get("type") == "error":
                self.failure = str(msg.get("message"))

    def wait_ready(self, deadline: float) -> bool:
        return self.ready.wait(max(0.0, deadline - time.monotonic()))

    def check(self) -> str | None:
        """Call often while the run lives: restarts a dead listener with backoff (at most
        MAX_RESTARTS times). Returns a tag value when something changed."""
        if self.proc is None or self.stopping or self.gave_up:
            return None
        now = time.monotonic()
        if self.next_restart is not None:
            if now >= self.next_restart:
                self.next_restart = None
                self.start()
            return None
        code = self.proc.poll()
        if code is None:
            return None
        if self.reader is not None:
            self.reader.join(timeout=2)
        err = self.proc.stderr.read().strip().splitlines() if self.proc.stderr else []
        reason = self.failure or (err[-1] if err else f"exited with code {code}")
        if self.restarts >= MAX_RESTARTS:
            self.gave_up = True
            return f"failed after {self.restarts} restarts: {reason}"
        self.restarts += 1
        self.next_restart = now + 2 ** (self.restarts - 1)  # 1 s, 2 s, 4 s
        return f"restarted {self.restarts}x: {reason}"

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sampling and wait until every line it wrote is in the sink. Safe twice."""
        self.stopping = True
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.reader is not None:
            self.reader.join(timeout=10)


def hello_tags(name: str, hello: dict | None) -> dict[str, str]:
    """Tags a listener reported in its hello line, plus its metric count."""
    if not hello:
        return {}
    tags = {str(k): str(v) for k, v in (hello.get("tags") or {}).items()}
    tags[f"radtrack.listener.{name}.metrics"] = str(len(hello.get("metrics", [])))
    if hello.get("interval") is not None:
        tags[f"radtrack.listener.{name}.interval_s"] = f"{float(hello['interval']):g}"
    return tags

