"""The launcher's one writer to MLflow for hardware metrics: spool first, then ship.

Every line a listener emits is appended to ``spool/<run_id>/<listener>.jsonl`` before
anything else happens (write-ahead: radtrack/store/spool.py), then a shipper thread sends
the samples to the store, exactly once, resuming where it stopped after an outage or a
crash (radtrack/store/shipping.py). At the end of the run each listener's trace goes in
as a Parquet artifact with summary metrics (radtrack/store/traces.py); a spool a killed
launcher left behind is picked up again by ``radtrack sync`` (radtrack/store/recovery.py).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.listeners.protocol import Hello, Message
from radtrack.script.records import folder_in
from radtrack.store import scriptlog
from radtrack.store.diskfull import Drops
from radtrack.store.outage import scrub
from radtrack.store.recovery import read_meta, read_spool, reopen_streams
from radtrack.store.restwriter import RestMetricWriter
from radtrack.store.shipping import FLUSH_EVERY_S, Shipper
from radtrack.store.spool import MAX_METRICS_PER_CALL, Span, Spool, hold, write_meta
from radtrack.store.sqlwriter import SqlMetricWriter
from radtrack.store.traces import store_traces, summarize

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient

__all__ = ["MAX_METRICS_PER_CALL", "Sink", "read_spool", "summarize"]

log = logging.getLogger(__name__)


class Sink:
    """Spool + batch shipper for one run."""

    # seconds the stored samples' clock is ahead of this host's (node K of a multi-node row
    # stores on node 0's clock: radtrack/nodes/sink.py): the run's span is stored shifted so
    offset_s: float = 0.0

    def __init__(self, client: MlflowClient, run_id: str, spool_root: Path, tracking_uri: str,
                 flush_every: float = FLUSH_EVERY_S, sql_bulk: bool = True):
        self.client = client
        self.run_id = run_id
        self.spool = Spool.create(spool_root, run_id, tracking_uri)
        self.dir = self.spool.dir
        self.shipper = Shipper(client, run_id, self.spool, flush_every, sql_bulk)
        self.spool.on_full = self.shipper.wake
        self.writer: SqlMetricWriter = self.shipper.writer  # a SQL store's bulk writes
        self.rest: RestMetricWriter = self.shipper.rest  # everything else: log_batch calls
        self.frames: dict[str, pd.DataFrame] = {}  # the traces finalize() stored, by listener
        self.summary_points: list | None = None  # close(defer_summaries=True): left to the caller

    @classmethod
    def unbound(cls, spool_root: Path, key: str, flush_every: float = FLUSH_EVERY_S,
                sql_bulk: bool = True) -> Sink:
        """A sink that spools from the first line on, before its run exists (the script
        starts before radtrack creates the run: radtrack/run/record.py); :meth:`bind` gives
        it the run and starts shipping. Until then its folder has no ``meta.json``."""
        sink = cls.__new__(cls)
        sink.client, sink.run_id = None, ""  # type: ignore[assignment]
        sink.spool = Spool(spool_root / key)
        sink.spool.dir.mkdir(parents=True, exist_ok=True)
        sink._owner = hold(sink.spool.dir)  # radtrack sync leaves a live launcher's spool alone
        sink.dir = sink.spool.dir
        sink.shipper = None  # type: ignore[assignment]
        sink._bind_args = (flush_every, sql_bulk)
        sink._unbound_error = "the run was never created"
        sink.frames = {}
        sink.summary_points = None
        return sink

    def bind(self, client: MlflowClient, run_id: str, tracking_uri: str) -> None:
        """The run exists now: record it in ``meta.json`` (``radtrack sync`` can finish it
        from here on) and start shipping what is spooled."""
        self._attach(client, run_id)
        try:
            write_meta(self.dir, run_id, tracking_uri)
        except OSError as exc:  # a full disk: finish.json names the run for sync instead
            log.warning("radtrack: could not write %s: %s", self.dir / "meta.json", exc)
        self.shipper.start()
        self.shipper.wake()

    def _attach(self, client: MlflowClient, run_id: str) -> None:
        """Ship to ``run_id`` from now on (the shipper is started by its caller)."""
        flush_every, sql_bulk = self._bind_args
        self.client, self.run_id = client, run_id
        self.shipper = Shipper(client, run_id, self.spool, flush_every, sql_bulk)
        self.writer, self.rest = self.shipper.writer, self.shipper.rest
        self.spool.on_full = self.shipper.wake

    @property
    def bound(self) -> bool:
        return self.shipper is not None

    # -- intake ------------------------------------------------------------------------
    def feed(self, listener: str, line: str, msg: Message | None = None) -> Message | None:
        """Take one line from a listener: spool it, queue samples. Returns its message.
        ``msg``: the line already decoded (a shared sampler's reader decodes it to route it)."""
        return self.spool.append(listener, line, msg)

    def hello(self, listener: str) -> Hello | None:
        return self.spool.hello(listener)

    def emitted(self, listener: str) -> int:
        return self.spool.emitted(listener)

    # -- the run's span ------------------------------------------------------------------
    def hold(self) -> None:
        """Store nothing until :meth:`set_start` says where the run starts (a listener
        started before the release reads before it)."""
        with self.spool.lock:
            self.spool.span.held = True

    def set_start(self, start: float) -> None:
        """The run starts at ``start`` (unix s): no sample before it is stored on the run."""
        with self.spool.lock:
            self.spool.span.start, self.spool.span.held = start + self.offset_s, False
        if self.shipper is not None:
            self.shipper.wake()

    def set_end(self, clock: Callable[[], float] | float) -> float:
        """The run ended: at ``clock()`` (read under the spool's lock, so no sample the
        shipper already took is stamped after it) or at the time given. No sample after it
        is stored on the run. Returns the end (on this host's clock)."""
        with self.spool.lock:
            end = clock() if callable(clock) else float(clock)
            self.spool.span.end = end + self.offset_s
        return end

    @property
    def span(self) -> Span:
        return self.spool.span

    # -- shipping ----------------------------------------------------------------------
    def start(self) -> None:
        if self.shipper is not None:
            self.shipper.start()

    def ship(self) -> bool:
        """Send everything pending; True when nothing is left unsent (never while unbound)."""
        return self.shipper.ship() if self.shipper is not None else not self.pending_count

    def lag_s(self) -> float:
        """Seconds since the oldest sample not yet stored was taken (0 when none waits)."""
        return self.spool.lag_s()

    @property
    def pending_count(self) -> int:
        return self.spool.pending_count()

    @property
    def stored(self) -> int:
        """Metric points stored so far."""
        return self.shipper.stored if self.shipper is not None else 0

    @property
    def drops(self) -> Drops:
        """Samples a full spool disk kept out (radtrack/store/diskfull.py)."""
        return self.spool.drops

    @property
    def refused(self) -> list[str]:
        """What MLflow refused of the values the script logged through RADTBenchmark."""
        return self.shipper.refused if self.shipper is not None else []

    @property
    def failures(self) -> int:
        """Failed store calls (store unreachable, ...)."""
        return self.shipper.failures if self.shipper is not None else 0

    @property
    def last_error(self) -> str:
        """Why storing failed last (shipping or the end-of-run artifacts); "" when never."""
        return self.shipper.last_error if self.shipper is not None else self._unbound_error

    @last_error.setter
    def last_error(self, text: str) -> None:
        if self.shipper is not None:
            self.shipper.last_error = text
        else:
            self._unbound_error = text

    # -- end of run --------------------------------------------------------------------
    def close(self, retry_for: float = 30.0, remove: bool = True, defer_summaries: bool = False) -> bool:
        """Stop the shipper, ship what is left (retrying while the store is away for up to
        ``retry_for`` seconds), store Parquet traces and summaries. True when the spool is
        fully stored (and then removed, unless not ``remove``: the caller has more of the
        run to store first); else it stays for ``radtrack sync``. ``defer_summaries``: the
        summary metrics are left in :attr:`summary_points` for the caller to store with the
        run's end (it keeps the spool until then: ``radtrack sync`` stores them again)."""
        if self.shipper is None:  # its run was never created: everything stays spooled
            self.spool.close_files()
            return False
        with self.spool.lock:  # a launch that failed before its release: no start to hold to
            self.spool.span.held = False
        self.shipper.stop()
        deadline = time.monotonic() + retry_for
        while not (self.ship() and self.shipper.ship_script()) and time.monotonic() < deadline:
            time.sleep(1.0)
        self.spool.close_files()
        if self.pending_count or scriptlog.pending(folder_in(self.dir)):
            return False
        try:
            self.finalize(defer_summaries)
        except Exception as exc:
            self.last_error = scrub(f"{type(exc).__name__}: {exc}")[:300]
            log.warning("radtrack: storing telemetry artifacts failed (%s); spool kept in %s",
                        self.last_error, self.dir)
            return False
        if remove:
            self.remove()
        return True

    def remove(self) -> None:
        """Everything is stored: the spool folder goes."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def finalize(self, defer_summaries: bool = False) -> None:
        """Parquet trace + probe JSON per listener, and summary metrics, as run artifacts."""
        self.summary_points = [] if defer_summaries else None
        ends = store_traces(self.client, self.run_id, self.spool.streams.values(), self.frames,
                            self.spool.span, self.summary_points)
        self.shipper.stored += ends  # the series' points at the span's ends are stored points too

    # -- crash recovery ----------------------------------------------------------------
    @classmethod
    def recover(cls, client: MlflowClient, run_dir: Path, run_id: str = "") -> Sink:
        """Rebuild a sink from a spool a killed launcher left behind (``radtrack sync``), for
        ``run_id`` (default: the one its ``meta.json`` names)."""
        run_id = run_id or read_meta(run_dir)["run_id"]
        # the folder is named by the launch's own key (its run did not exist yet when the
        # spool started: radtrack/run/record.py), or by the run id (older spools)
        sink = cls.unbound(run_dir.parent, run_dir.name)
        sink.spool.streams.update(reopen_streams(run_dir))
        sink.spool.span = spooled_span(run_dir)
        sink._attach(client, run_id)
        return sink


def spooled_span(run_dir: Path) -> Span:
    """The span a launcher recorded in the row's ``finish.json`` (its start and end); open
    where it recorded none (it was killed while the row ran: every reading is stored)."""
    from radtrack.store import runfiles

    finish = runfiles.read(run_dir, runfiles.FINISH_FILE) or {}
    try:
        start = float(finish.get("start") or 0) or None
        end = float(finish.get("end") or 0) or None
    except (TypeError, ValueError):
        return Span()
    # the start to the microsecond, as the listeners were told it (supervise.as_told)
    return Span(None if start is None else float(f"{start:.6f}"), end)
