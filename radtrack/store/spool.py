"""The sink's intake: each listener line spooled first (write-ahead), its samples queued.

A run's spool folder holds ``meta.json`` (run id, tracking URI), per listener
``<listener>.jsonl`` (every line it wrote, as written) and ``<listener>.shipped`` (how many
of those lines are stored: radtrack/store/shipping.py). Lines are read as typed messages
(radtrack/listeners/protocol.py); a sample waits in its stream's ``pending`` list until shipped.

The spool keeps every line; what is the run's is its span (:class:`Span`: its script's start
to its end): a sample stamped outside it is spooled but never stored on the run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from radtrack.atomic import write_atomic
from radtrack.listeners.protocol import (
    Hello,
    Message,
    ProtocolError,
    Sample,
    Samples,
    decode,
    decode_line,
)
from radtrack.store.diskfull import Drops

MAX_METRICS_PER_CALL = 1000  # metric points one store call carries at most
SPOOL_DIR = "spool"  # under $RADTRACK_HOME: one folder per run
META_FILE = "meta.json"
SPOOL_SUFFIX = ".jsonl"
SHIPPED_SUFFIX = ".shipped"


@dataclass(slots=True)
class Pending:
    """A spooled sample not yet stored."""

    # its line in the spool file: ``.shipped`` counts up to ``line + 1`` once it is stored;
    # a sample of a batch line that is not its last counts one line less (the line is
    # stored only with its last sample)
    line: int
    step: int  # its index among the stream's samples (the MLflow step)
    t: float  # unix seconds
    values: dict[str, float]


@dataclass
class Stream:
    """One listener's spool file and the samples of it still to ship."""

    name: str
    path: Path
    file: IO[str]
    lines: int = 0  # lines in the spool file
    samples: int = 0  # sample lines seen (the step of the next one)
    shipped: int = 0  # spool lines stored in MLflow
    pending: list[Pending] = field(default_factory=list)
    pending_points: int = 0  # metric points in ``pending`` (wakes the shipper at 1000)
    hello: Hello | None = None

    def take(self, msg: Message | None, queue: bool = True) -> None:
        """Count the line ``msg`` came on (None: a line that is no message); a sample is
        queued (``queue``: not yet stored), a hello kept."""
        index = self.lines
        self.lines += 1
        if type(msg) is Sample:
            if queue:
                self.pending.append(Pending(index, self.samples, msg.t, msg.values))
                self.pending_points += len(msg.values)
            self.samples += 1
        elif type(msg) is Samples:  # a columnar batch: its samples, in order
            batch = msg.expand()
            if queue:
                last = len(batch) - 1
                for i, sample in enumerate(batch):
                    self.pending.append(Pending(index if i == last else index - 1,
                                                self.samples + i, sample.t, sample.values))
                    self.pending_points += len(sample.values)
            self.samples += len(batch)
        elif type(msg) is Hello:
            self.hello = msg


@dataclass
class Span:
    """The run's span, unix seconds: its script's start to its last process's end. None: not
    known (yet); ``held``: nothing ships until the start is known (the launcher holds a row's
    samples so until its release)."""

    start: float | None = None
    end: float | None = None
    held: bool = False

    def holds(self, t: float) -> bool:
        """Whether a sample stamped ``t`` is the run's."""
        return not ((self.start is not None and t < self.start) or (self.end is not None and t > self.end))


class Spool:
    """A run's spool folder: its streams, and the lock intake and shipping share."""

    def __init__(self, folder: Path, on_full: Callable[[], None] = lambda: None):
        self.dir = folder
        self.streams: dict[str, Stream] = {}
        self.lock = threading.Lock()
        self.span = Span()  # read and changed under ``lock`` (the shipper filters by it)
        self.drops = Drops(str(folder))  # lines a full disk kept out (radtrack/store/diskfull.py)
        self.on_full = on_full  # called while a store call's worth of points waits

    @classmethod
    def create(cls, root: Path, run_id: str, tracking_uri: str) -> Spool:
        """A run's spool folder with its ``meta.json``."""
        folder = root / run_id
        folder.mkdir(parents=True, exist_ok=True)
        write_meta(folder, run_id, tracking_uri)
        return cls(folder)

    def path(self, listener: str, suffix: str = SPOOL_SUFFIX) -> Path:
        return self.dir / f"{listener}{suffix}"

    def _open(self, name: str) -> Stream:
        path = self.path(name)
        s = self.streams[name] = Stream(name, path, path.open("a", encoding="utf-8"))
        return s

    def append(self, listener: str, line: str, msg: Message | None = None) -> Message | None:
        """Spool one line of ``listener`` and queue what it says; return its message (None
        for a blank line). ``msg``: the line already decoded (a shared sampler's reader
        decodes it to route it)."""
        line = line.strip()
        if not line:
            return None
        if msg is None:
            try:  # decode_line's work, inline: this runs for every line of every listener
                msg = decode(line)
            except ProtocolError:
                line, msg = decode_line(line)
        with self.lock:
            try:
                s = self.streams.get(listener) or self._open(listener)
                _write_line(s.file, (line + "\n").encode())
            except OSError as exc:  # a full disk: dropped and counted, the run goes on
                self.drops.dropped(_samples_in(msg), exc)
                return msg
            self.drops.resumed()
            s.take(msg)
            if s.pending_points >= MAX_METRICS_PER_CALL:
                self.on_full()
        return msg

    def close_files(self) -> None:
        with self.lock:
            for s in self.streams.values():
                s.file.close()

    def lag_s(self) -> float:
        """Seconds since the oldest sample not yet stored was taken (0 when none waits)."""
        with self.lock:
            oldest = min((s.pending[0].t for s in self.streams.values() if s.pending), default=None)
        return 0.0 if oldest is None else max(0.0, time.time() - oldest)

    def pending_count(self) -> int:
        with self.lock:
            return sum(len(s.pending) for s in self.streams.values())

    def emitted(self, listener: str) -> int:
        s = self.streams.get(listener)
        return s.samples if s else 0

    def hello(self, listener: str) -> Hello | None:
        s = self.streams.get(listener)
        return s.hello if s else None


def _write_line(file: IO[str], data: bytes) -> None:
    """Append ``data`` with one write to the file's descriptor (opened for appending); a
    write the disk cut short is taken back, so the file never holds a torn line."""
    import os

    fd = file.fileno()
    written = os.write(fd, data)
    if written != len(data):
        try:
            os.ftruncate(fd, os.fstat(fd).st_size - written)
        except OSError:
            pass
        raise OSError(28, "No space left on device (short write)")


def _samples_in(msg: Message | None) -> int:
    """How many samples a line carried (a columnar batch carries several)."""
    if type(msg) is Sample:
        return 1
    expand = getattr(msg, "expand", None)
    return len(expand()) if callable(expand) else 0


def write_meta(folder: Path, run_id: str, tracking_uri: str) -> None:
    """The spool's ``meta.json``: which run, in which store (atomically: sync reads it). The
    URI is kept without its password (sync takes it back from the environment)."""
    from radtrack.store.uris import without_password

    write_atomic(folder / META_FILE,
                 json.dumps({"run_id": run_id, "tracking_uri": without_password(tracking_uri)}))


OWNER_FILE = "owner.lock"  # held (flock) by the process that spools into the folder


def hold(folder: Path) -> IO[str] | None:
    """Take the folder's owner lock for this process's life (released when it exits, however
    it exits); None when another live process holds it. The file names the holder."""
    import fcntl
    import os
    import socket

    f = (folder / OWNER_FILE).open("a+", encoding="utf-8")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    try:
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        f.flush()
    except OSError:  # a full disk: the lock holds all the same, unnamed
        pass
    return f


def holder(folder: Path) -> str:
    """Who holds the folder's owner lock, as the holder wrote it."""
    try:
        return (folder / OWNER_FILE).read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"
