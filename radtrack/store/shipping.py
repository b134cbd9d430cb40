"""The sink's shipper: spooled samples to the store in bounded rounds, then ``.shipped`` marks.

A shipper thread sends the samples at least every 2 s, sooner once 1000 points wait, and
at the end: into a SQL store in one transaction a round (radtrack/store/sqlwriter.py), to
a tracking server as log_batch calls of at most 1000 metrics, several in flight
(radtrack/store/restwriter.py). ``<listener>.shipped`` counts the spool lines already
stored, and only advances over a stream's calls in order, so shipping resumes where it
stopped after an outage or a crash; MLflow's metric primary key makes a resent batch
idempotent, so every sample is stored exactly once. Only the samples inside the run's span
(spool.Span) are stored: one stamped before its start or after its end is the workload's
(its partners' listeners cover the device then), never the run's; it stays in the spool.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import TYPE_CHECKING

from radtrack.atomic import write_atomic
from radtrack.script.records import folder_in
from radtrack.store import scriptlog
from radtrack.store.outage import scrub
from radtrack.store.restwriter import NotSent, RestMetricWriter
from radtrack.store.spool import MAX_METRICS_PER_CALL, SHIPPED_SUFFIX, Pending, Span, Spool, Stream
from radtrack.store.sqlwriter import SqlMetricWriter
from radtrack.vocab.schema import SYSTEM_PREFIX

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger(__name__)

FLUSH_EVERY_S = 2.0
ROUND_CALLS = 32  # chunks a stream sends in one shipping round (a backlog goes in rounds)

Point = tuple[str, float, int, int]  # key, value, timestamp ms, step
Work = tuple[Stream, list[Pending], list[Point]]  # one store call's worth of a stream


class Shipper:
    """Ships a spool's pending samples to one run; counts what is stored and what failed."""

    def __init__(self, client: MlflowClient, run_id: str, spool: Spool,
                 flush_every: float = FLUSH_EVERY_S, sql_bulk: bool = True):
        self.client, self.run_id = client, run_id
        self.spool = spool
        self.refused: list[str] = []  # what MLflow refused of the script's records (said at the end)
        self._failing = False  # within an outage: its first failure is logged, not every round
        self.flush_every = flush_every
        self.writer = SqlMetricWriter(client)
        self.writer.enabled = self.writer.enabled and sql_bulk
        self.rest = RestMetricWriter(client)  # everything else: log_batch calls
        self.stored = 0  # metric points stored so far
        self.failures = 0  # failed store calls (store unreachable, ...)
        self.last_error = ""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        """Ship now. Skipped while a wake-up is pending: the round it starts takes every
        sample queued before it (Event.set() takes a lock; a backlog calls this per line)."""
        if not self._wake.is_set():
            self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"sink-{self.run_id[:8]}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (after the round it is in); ship() still works."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.flush_every)
            self._wake.clear()
            if self.ship():
                self.ship_script()

    def ship_script(self) -> bool:
        """The script's RADTBenchmark records (radtrack/store/scriptlog.py); True when none is
        left unsent."""
        folder = folder_in(self.spool.dir)
        if not scriptlog.pending(folder):
            return True
        with self._lock:
            try:
                ok = scriptlog.ship(self.client, self.run_id, folder, self.refused)
            except Exception as exc:  # noqa: BLE001 - never kill the shipper thread
                self.last_error = scrub(f"{type(exc).__name__}: {exc}")[:300]
                return False
        if not ok:
            self.failures += 1
        return ok

    def ship(self) -> bool:
        """Send everything pending; True when nothing is left unsent. A backlog (after an
        outage) goes in rounds of at most ROUND_CALLS calls a stream, so memory stays
        bounded however long the store was away."""
        with self._lock:
            while True:
                per_stream, more = self._next_round()
                if not per_stream:
                    return True
                ok = self._ship_sql(per_stream) if self.writer.enabled else self._ship_rest(per_stream)
                if not ok or not more:
                    return ok

    def _next_round(self) -> tuple[list[list[Work]], bool]:
        """Per stream, its next chunks (<= 1000 points each, whole samples, at most
        ROUND_CALLS); and whether any stream had more pending."""
        per_stream: list[list[Work]] = []
        more = False
        for s in list(self.spool.streams.values()):
            with self.spool.lock:  # the span as it stands when these samples are taken
                span = Span(self.spool.span.start, self.spool.span.end, self.spool.span.held)
                waiting = len(s.pending)
                pending = s.pending[:ROUND_CALLS * MAX_METRICS_PER_CALL]  # >= ROUND_CALLS chunks
            if span.held:
                return [], False
            chunks = _chunks(pending)
            if len(chunks) > ROUND_CALLS:
                chunks, more = chunks[:ROUND_CALLS], True
            elif waiting > len(pending):  # samples without values fill no chunk
                more = True
            if chunks:
                per_stream.append([(s, chunk, _points(chunk, span)) for chunk in chunks])
        return per_stream, more

    def _ship_sql(self, per_stream: list[list[Work]]) -> bool:
        """SQL store: every stream's points in one transaction (one commit a round)."""
        work = [w for chunks in per_stream for w in chunks]
        try:
            self.writer.log_metrics(self.run_id, [p for _, _, points in work for p in points])
        except Exception as exc:  # store unreachable: everything stays spooled
            self._failed(work[0][0], exc)
            return False
        for s, chunk, points in work:
            self._done(s, chunk, points)
        return True

    def _ship_rest(self, per_stream: list[list[Work]]) -> bool:
        """One log_batch call per chunk, several in flight against a server; streams
        interleaved so concurrent calls mostly touch different keys."""
        work = [w for rnd in itertools.zip_longest(*per_stream) for w in rnd if w is not None]
        results = self.rest.log_many(self.run_id, [points for _, _, points in work])
        outcome = {id(w): r for w, r in zip(work, results, strict=True)}
        ok = True
        for chunks in per_stream:  # a stream's .shipped advances over its chunks in order
            for w in chunks:
                error = outcome[id(w)]
                if error is not None:
                    # this stream's later chunks stay pending even if they were stored:
                    # resent, they are no-ops (MLflow's metric primary key)
                    if not isinstance(error, NotSent):
                        self._failed(w[0], error)
                    ok = False
                    break
                self._done(*w)
        return ok

    def _failed(self, s: Stream, exc: Exception) -> None:
        self.failures += 1
        self.last_error = scrub(f"{type(exc).__name__}: {exc}")[:300]
        if not self._failing:  # once per outage, not every round
            self._failing = True
            log.warning("radtrack: storing %s samples failed (%s); kept in %s", s.name,
                        self.last_error, s.path)

    def _done(self, s: Stream, chunk: list[Pending], points: list[Point]) -> None:
        self._failing = False
        with self.spool.lock:  # only ship() removes, and only from the front
            del s.pending[:len(chunk)]
            s.pending_points -= sum(len(p.values) for p in chunk)  # outside the span too
        self.stored += len(points)
        self._mark_shipped(s, chunk[-1].line + 1)

    def _mark_shipped(self, s: Stream, lines: int) -> None:
        s.shipped = lines
        marker = self.spool.path(s.name, SHIPPED_SUFFIX)
        try:
            write_atomic(marker, str(lines), durable=False)  # a lag is a resend
        except OSError as exc:  # a full disk: the marker lags; what it says is resent, a no-op
            log.debug("radtrack: %s not updated: %s", marker, exc)


def _chunks(pending: list[Pending]) -> list[list[Pending]]:
    """Group samples so one log_batch call carries at most 1000 metrics (whole samples)."""
    out: list[list[Pending]] = []
    cur: list[Pending] = []
    n = 0
    for item in pending:
        k = len(item.values)
        if cur and n + k > MAX_METRICS_PER_CALL:
            out.append(cur)
            cur, n = [], 0
        cur.append(item)
        n += k
    if cur:
        out.append(cur)
    return out


def _points(chunk: list[Pending], span: Span | None = None) -> list[Point]:
    """(key, value, timestamp ms, step) points of the samples inside ``span``; plain tuples
    keep the hot path cheap. Keys get MLflow's ``system/`` prefix (radtrack/vocab/schema.py);
    spool and Parquet keep the bare form."""
    out: list[Point] = []
    for p in chunk:
        if span is not None and not span.holds(p.t):
            continue  # spooled, not the run's
        ms, step = int(p.t * 1000), p.step
        out += [(SYSTEM_PREFIX + k, float(v), ms, step) for k, v in p.values.items()]
    return out
