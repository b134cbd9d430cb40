"""The launcher's one writer to MLflow for hardware metrics: spool first, then ship.

Every line a listener emits is appended to ``spool/<run_id>/<listener>.jsonl`` before
anything else happens (write-ahead), then a shipper thread sends the samples (at least
every 2 s, sooner once 1000 points wait, and at the end): into a SQL store in one
transaction a flush (radtrack/store/sqlwriter.py), to a tracking server as log_batch calls of at
most 1000 metrics, several in flight (radtrack/store/restwriter.py). ``<listener>.shipped``
counts the spool lines already stored, and only advances over a stream's calls in order,
so shipping resumes where it stopped after an outage or a crash; MLflow's metric primary
key makes a resent batch idempotent, so every sample is stored exactly once.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from radtrack.stats import counter_delta, time_weighted_mean
from radtrack.store.restwriter import NotSent, RestMetricWriter
from radtrack.store.schema import SYSTEM_PREFIX

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient

log = logging.getLogger(__name__)

MAX_METRICS_PER_CALL = 1000
FLUSH_EVERY_S = 2.0
ROUND_CALLS = 32  # chunks a stream sends in one shipping round (a backlog goes in rounds)


@dataclass
class _Stream:
    name: str
    path: Path
    file: Any
    lines: int = 0  # lines in the spool file
    samples: int = 0  # sample lines seen (the step of the next one)
    shipped: int = 0  # spool lines stored in MLflow
    pending: list[tuple[int, int, float, dict[str, float]]] = field(default_factory=list)
    pending_points: int = 0  # metric points in ``pending`` (wakes the shipper at 1000)
    hello: dict[str, Any] | None = None


class Sink:
    """Spool + batch shipper for one run."""

    def __init__(self, client: MlflowClient, run_id: str, spool_root: Path, tracking_uri: str,
                 flush_every: float = FLUSH_EVERY_S, sql_bulk: bool = True):
        self.client = client
        self.run_id = run_id
        self.dir = spool_root / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "meta.json").write_text(json.dumps({"run_id": run_id, "tracking_uri": tracking_uri}))
        self.flush_every = flush_every
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ship_lock = threading.Lock()
        from radtrack.store.sqlwriter import SqlMetricWriter

        self.writer = SqlMetricWriter(client)
        self.writer.enabled = self.writer.enabled and sql_bulk
        self.frames: dict[str, pd.DataFrame] = {}  # the traces finalize() stored, by listener
        self.rest = RestMetricWriter(client)  # everything else: log_batch calls
        self.stored = 0  # metric points stored so far
        self.failures = 0  # failed log_batch calls (store unreachable, ...)
        self.last_error = ""

    # -- intake ------------------------------------------------------------------------
    def _stream(self, name: str) -> _Stream:
        s = self._streams.get(name)
        if s is None:
            path = self.dir / f"{name}.jsonl"
            s = _Stream(name, path, path.open("a", encoding="utf-8"))
            self._streams[name] = s
        return s

    def feed(self, listener: str, line: str, msg: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Take one JSON line from a listener: spool it, queue samples. Returns the message.
        ``msg``: the line already parsed (a shared sampler's reader parses it to route it)."""
        line = line.strip()
        if not line:
            return None
        if msg is None:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                msg = {"type": "error", "message": f"unparsable output: {line[:200]}"}
                line = json.dumps(msg)
        with self._lock:
            s = self._stream(listener)
            s.file.write(line + "\n")
            s.file.flush()
            index = s.lines
            s.lines += 1
            kind = msg.get("type")
            if kind == "sample":
                values = msg.get("v", {})
                s.pending.append((index, s.samples, float(msg["t"]), values))
                s.pending_points += len(values)
                s.samples += 1
            elif kind == "hello":
                s.hello = msg
            if s.pending_points >= MAX_METRICS_PER_CALL:
                self._wake.set()
        return msg

    # -- shipping ----------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"sink-{self.run_id[:8]}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.flush_every)
            self._wake.clear()
            self.ship()

    def ship(self) -> bool:
        """Send everything pending; True when nothing is left unsent. A backlog (after an
        outage) goes in rounds of at most ROUND_CALLS calls a stream, so memory stays
        bounded however long the store was away."""
        with self._ship_lock:
            while True:
                per_stream, more = self._next_round()
                if not per_stream:
                    return True
                ok = self._ship_sql(per_stream) if self.writer.enabled else self._ship_rest(per_stream)
                if not ok or not more:
                    return ok

    def _next_round(self) -> tuple[list[list[tuple[_Stream, list[Any], list[Any]]]], bool]:
        """Per stream, its next chunks (<= 1000 points each, whole samples, at most
        ROUND_CALLS); and whether any stream had more pending."""
        per_stream, more = [], False
        for s in list(self._streams.values()):
            with self._lock:
                waiting = len(s.pending)
                pending = s.pending[:ROUND_CALLS * MAX_METRICS_PER_CALL]  # >= ROUND_CALLS chunks
            chunks = _chunks(pending)
            if len(chunks) > ROUND_CALLS:
                chunks, more = chunks[:ROUND_CALLS], True
            elif waiting > len(pending):  # samples without values fill no chunk
                more = True
            if chunks:
                per_stream.append([(s, chunk, _metrics(chunk)) for chunk in chunks])
        return per_stream, more

    def _ship_sql(self, per_stream: list[list[tuple[_Stream, list[Any], list[Any]]]]) -> bool:
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

    def _ship_rest(self, per_stream: list[list[tuple[_Stream, list[Any], list[Any]]]]) -> bool:
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

    def _failed(self, s: _Stream, exc: Exception) -> None:
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("radtrack: storing %s samples failed (%s); kept in %s", s.name, self.last_error, s.path)

    def _done(self, s: _Stream, chunk: list[Any], points: list[Any]) -> None:
        with self._lock:  # only ship() removes, and only from the front
            del s.pending[:len(chunk)]
            s.pending_points -= len(points)
        self.stored += len(points)
        self._mark_shipped(s, chunk[-1][0] + 1)

    def _mark_shipped(self, s: _Stream, lines: int) -> None:
        s.shipped = lines
        tmp = s.path.with_name(s.name + ".shipped.tmp")
        tmp.write_text(str(lines))
        tmp.replace(s.path.with_name(s.name + ".shipped"))

    def lag_s(self) -> float:
        """Seconds since the oldest sample not yet stored was taken (0 when none waits)."""
        with self._lock:
            oldest = min((s.pending[0][2] for s in self._streams.values() if s.pending), default=None)
        return 0.0 if oldest is None else max(0.0, time.time() - oldest)

    @property
    def pending_count(self) -> int:
        with self._lock:
            return sum(len(s.pending) for s in self._streams.values())

    def emitted(self, listener: str) -> int:
        s = self._streams.get(listener)
        return s.samples if s else 0

    def hello(self, listener: str) -> dict[str, Any] | None:
        s = self._streams.get(listener)
        return s.hello if s else None

    # -- end of run --------------------------------------------------------------------
    def close(self, retry_for: float = 30.0) -> bool:
        """Stop the shipper, ship what is left (retrying while the store is away for up to
        ``retry_for`` seconds), store Parquet traces and summaries. True when the spool is
        fully stored (and then removed); else it stays for ``radtrack sync``."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + retry_for
        while not self.ship() and time.monotonic() < deadline:
            time.sleep(1.0)
        with self._lock:
            for s in self._streams.values():
                s.file.close()
        if self.pending_count:
            return False
        try:
            self.finalize()
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("radtrack: storing telemetry artifacts failed (%s); spool kept in %s",
                        self.last_error, self.dir)
            return False
        shutil.rmtree(self.dir, ignore_errors=True)
        return True

    def finalize(self) -> None:
        """Parquet trace + probe JSON per listener, and summary metrics, as run artifacts."""
        import tempfile

        from mlflow.entities import Metric

        summary: list[Metric] = []
        now = int(time.time() * 1000)
        with tempfile.TemporaryDirectory() as tmp:
            for s in self._streams.values():
                frame = read_spool(s.path)
                if s.hello is not None:
                    probe = Path(tmp) / f"{s.name}.json"
                    probe.write_text(json.dumps(s.hello, indent=1))
                    self.client.log_artifact(self.run_id, str(probe), "telemetry")
                if frame.empty:
                    continue
                self.frames[s.name] = frame
                out = Path(tmp) / f"{s.name}.parquet"
                frame.to_parquet(out, index=False)
                self.client.log_artifact(self.run_id, str(out), "telemetry")
                summary += [Metric(k, v, now, 0) for k, v in summarize(frame).items()]
        for i in range(0, len(summary), MAX_METRICS_PER_CALL):
            self.client.log_batch(self.run_id, metrics=summary[i:i + MAX_METRICS_PER_CALL])

    # -- crash recovery ----------------------------------------------------------------
    @classmethod
    def recover(cls, client: MlflowClient, run_dir: Path) -> Sink:
        """Rebuild a sink from a spool a killed launcher left behind (``radtrack sync``)."""
        meta = json.loads((run_dir / "meta.json").read_text())
        sink = cls(client, meta["run_id"], run_dir.parent, meta["tracking_uri"])
        for path in sorted(run_dir.glob("*.jsonl")):
            name = path.stem
            marker = run_dir / f"{name}.shipped"
            shipped = int(marker.read_text()) if marker.exists() else 0
            s = _Stream(name, path, path.open("a", encoding="utf-8"), shipped=shipped)
            with path.open(encoding="utf-8") as f:
                for line_no, line in enumerate(f):
                    s.lines += 1
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a torn last line from the crash
                    if msg.get("type") == "hello":
                        s.hello = msg
                    elif msg.get("type") == "sample":
                        if line_no >= shipped:
                            values = msg.get("v", {})
                            s.pending.append((line_no, s.samples, float(msg["t"]), values))
                            s.pending_points += len(values)
                        s.samples += 1
            sink._streams[name] = s
        return sink


def _chunks(pending: list[tuple[int, int, float, dict[str, float]]]) -> list[list[Any]]:
    """Group samples so one log_batch call carries at most 1000 metrics (whole samples)."""
    out: list[list[Any]] = []
    cur: list[Any] = []
    n = 0
    for item in pending:
        k = len(item[3])
        if cur and n + k > MAX_METRICS_PER_CALL:
            out.append(cur)
            cur, n = [], 0
        cur.append(item)
        n += k
    if cur:
        out.append(cur)
    return out


def _metrics(chunk: list[tuple[int, int, float, dict[str, float]]]) -> list[tuple[str, float, int, int]]:
    """(key, value, timestamp ms, step) points; plain tuples keep the hot path cheap. Keys
    get MLflow's ``system/`` prefix (radtrack/store/schema.py); spool and Parquet keep the bare form."""
    return [(SYSTEM_PREFIX + k, float(v), int(t * 1000), step) for _, step, t, vals in chunk
            for k, v in vals.items()]


def read_spool(path: Path) -> pd.DataFrame:
    """A listener's spool file as the wide Parquet layout: time, step, one column per key."""
    import pandas as pd

    rows = []
    step = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if msg.get("type") == "sample":
                rows.append({"time": float(msg["t"]), "step": step, **msg.get("v", {})})
                step += 1
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["step"] = frame["step"].astype("int64")
    for col in frame.columns[2:]:
        frame[col] = frame[col].astype("float64")
    return frame


def summarize(frame: pd.DataFrame) -> dict[str, float]:
    """summary/<key>/mean|min|max for every metric; summary/<key> for energy counters."""
    out: dict[str, float] = {}
    t = frame["time"].to_numpy()
    for key in frame.columns[2:]:
        v = frame[key].to_numpy(dtype=float)
        if key.endswith("energy_j"):
            delta = counter_delta(v)
            if delta == delta:  # fewer than two readings: no energy rather than a fake 0
                out[f"summary/{key}"] = delta
            continue
        mean = time_weighted_mean(t, v)
        if mean != mean:  # all NaN
            continue
        out[f"summary/{key}/mean"] = mean
        out[f"summary/{key}/min"] = float(frame[key].min())
        out[f"summary/{key}/max"] = float(frame[key].max())
    return out
