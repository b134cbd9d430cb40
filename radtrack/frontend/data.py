"""The frontend's read-only, cached view of the tracking store.

Everything is read through :mod:`radtrack.analysis.data`; this module only adds what an
interactive page needs: a per-(run, metric) cache of full-resolution numpy series so that
zooming re-samples from memory, and a refresh of everything that belongs to a run that
is still RUNNING.

Listener metrics are taken column by column from the run's Parquet traces
(``read_telemetry``) rather than through ``load_series``: the long format that function
returns costs a melt and a sort of every sample (about 1.6 s for 10 runs x 4 metrics x
36,000 points on a 2-core machine) where the chart needs plain arrays. Metrics without a
trace (the script's own metrics, or any metric of a run still RUNNING) come from
``load_series``, which reads MLflow's metric history.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Experiment, ViewType

from radtrack.analysis import data as analysis
from radtrack.analysis.run_records import records_frame
from radtrack.errors import RadtrackError
from radtrack.vocab.schema import NODES, split_node, trace_of

#: statuses whose data can still grow; anything else is cached for the life of the server
LIVE_STATUSES = frozenset({"RUNNING", "SCHEDULED"})
X_MODES = ("seconds", "wall", "step")
NODES_TAG = f"tag.{NODES}"


@dataclass(frozen=True)
class Series:
    """One metric of one run at full resolution, sorted by time, without NaN."""

    run_id: str
    metric: str
    start: float  # the run's start, unix seconds
    seconds: np.ndarray  # since the run's start
    step: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return len(self.value)

    def x(self, mode: str) -> np.ndarray:
        """The x values for an axis mode: seconds since start, wall clock (unix s) or step."""
        if mode == "seconds":
            return self.seconds
        if mode == "wall":
            return self.seconds + self.start
        if mode == "step":
            return self.step.astype(np.float64)
        raise ValueError(f"unknown x axis mode {mode!r}; use one of {', '.join(X_MODES)}")

    def by_x(self, mode: str) -> Series:
        """This series ordered by the x of ``mode``: itself for time (a series is made
        sorted by time), sorted once for steps (they may be logged out of time order)."""
        if mode == "step":
            return self._by_step
        if mode not in X_MODES:
            self.x(mode)  # names the unknown mode
        return self

    @functools.cached_property
    def _by_step(self) -> Series:
        order = np.argsort(self.step, kind="stable")
        if np.all(order[1:] > order[:-1]):
            return self
        return Series(self.run_id, self.metric, self.start, self.seconds[order],
                      self.step[order], self.value[order])


def _empty(run_id: str, metric: str, start: float) -> Series:
    return Series(run_id, metric, start, np.empty(0), np.empty(0, dtype=np.int64), np.empty(0))


@dataclass
class _Entry:
    value: object
    loaded_at: float
    live: bool


class DataSource:
    """Cached access to one tracking store; safe to share between Dash's request threads."""

    def __init__(self, tracking_uri: str, refresh_s: float = 2.0, listing_ttl_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.tracking_uri = tracking_uri
        self.refresh_s = refresh_s
        self.listing_ttl_s = listing_ttl_s
        self._clock = clock
        self._lock = threading.RLock()
        self._runs: dict[str, _Entry] = {}
        self._series: dict[tuple[str, str], _Entry] = {}
        self._keys: dict[str, _Entry] = {}
        self._listings: dict[str, _Entry] = {}
        self._experiments: dict[str, Experiment] = {}
        self._absent: dict[str, float] = {}  # run ids not in the store, when last asked

    # Freshness ---------------------------------------------------------------------------
    def _fresh(self, entry: _Entry | None, ttl: float | None = None) -> bool:
        if entry is None:
            return False
        if ttl is not None:
            return self._clock() - entry.loaded_at < ttl
        return not entry.live or self._clock() - entry.loaded_at < self.refresh_s

    # Experiments and runs ----------------------------------------------------------------
    def experiments(self) -> list[str]:
        """Names of the active experiments that hold at least one run, oldest first."""
        client = MlflowClient(tracking_uri=self.tracking_uri)
        found = client.search_experiments(view_type=ViewType.ACTIVE_ONLY,
                                          order_by=["creation_time ASC"])
        with self._lock:
            # a listing then searches the experiment's runs straight away, without first
            # looking its name up again (docs/performance.md, "Frontend")
            self._experiments = {e.name: e for e in found}
        return [e.name for e in found if e.name != "Default" or self._has_runs(client, e)]

    @staticmethod
    def _has_runs(client: MlflowClient, experiment) -> bool:
        return bool(client.search_runs([experiment.experiment_id], max_results=1))

    def experiment_runs(self, experiment: str) -> pd.DataFrame:
        """Every run of ``experiment`` (parents included), re-read at most every few seconds."""
        return records_frame(self.experiment_rows(experiment))

    def experiment_rows(self, experiment: str) -> list[dict]:
        """:meth:`experiment_runs` as records (radtrack/analysis/run_records.py): every picker
        step asks, and an experiment click reads the listing."""
        with self._lock:
            entry = self._listings.get(experiment)
            if self._fresh(entry, self.listing_ttl_s):
                return entry.value  # type: ignore[return-value, union-attr]
            known = self._experiments.get(experiment)
        rows = analysis.load_run_records(experiment=known or experiment,
                                         tracking_uri=self.tracking_uri, include_parents=True)
        with self._lock:
            self._listings[experiment] = _Entry(rows, self._clock(), True)
            for row in rows:
                self._runs[row["run_id"]] = _Entry(row, self._clock(),
                                                   row["status"] in LIVE_STATUSES)
        return rows

    def runs(self, run_ids: Iterable[str]) -> pd.DataFrame:
        """One row per run (as ``load_runs``), in the order asked; live runs re-read."""
        rows = self.run_rows(run_ids)
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["run_id", "status"])

    def run_rows(self, run_ids: Iterable[str]) -> list[dict]:
        """:meth:`runs` as the cached row dicts (no frame built: a zoom asks three times)."""
        run_ids = list(dict.fromkeys(run_ids))
        with self._lock:
            stale = [r for r in run_ids if not self._fresh(self._runs.get(r))]
        if stale:
            found = analysis.load_run_records(run_ids=stale, tracking_uri=self.tracking_uri)
            with self._lock:
                for row in found:
                    self._runs[row["run_id"]] = _Entry(row, self._clock(),
                                                       row["status"] in LIVE_STATUSES)
        with self._lock:
            return [self._runs[r].value for r in run_ids]  # type: ignore[misc]

    def known_rows(self, run_ids: Iterable[str]) -> list[dict]:
        """:meth:`run_rows` of those of ``run_ids`` the store holds; an id it lacks (a run
        deleted, or in another store) is skipped and not asked again for a listing's TTL."""
        now = self._clock()
        with self._lock:
            wanted = [r for r in dict.fromkeys(run_ids)
                      if now - self._absent.get(r, -np.inf) >= self.listing_ttl_s]
        try:
            return self.run_rows(wanted)
        except RadtrackError:  # some id is not in the store: ask one by one
            found = []
            for run_id in wanted:
                try:
                    found += self.run_rows([run_id])
                except RadtrackError:
                    with self._lock:
                        self._absent[run_id] = now
            return found

    def any_live(self, run_ids: Iterable[str]) -> bool:
        return any(row["status"] in LIVE_STATUSES for row in self.run_rows(run_ids))

    # Metric keys ---------------------------------------------------------------------------
    def metric_keys(self, run_ids: Iterable[str]) -> list[str]:
        """The metric keys present in any of the runs (telemetry and logged), sorted; a
        multi-node run's ``node<K>/<key>`` counts as ``<key>`` (the page draws every node's
        series of a key it lists: radtrack/frontend/nodes.py)."""
        run_ids = list(dict.fromkeys(run_ids))
        rows = self.run_rows(run_ids)
        live = {row["run_id"]: row["status"] in LIVE_STATUSES for row in rows}
        nodes = {row["run_id"]: node_count(row) for row in rows}
        keys: set[str] = set()
        for run_id in run_ids:
            with self._lock:
                entry = self._keys.get(run_id)
            if not self._fresh(entry):
                found = analysis.list_metrics([run_id], tracking_uri=self.tracking_uri)
                entry = _Entry(found, self._clock(), bool(live.get(run_id)))
                with self._lock:
                    self._keys[run_id] = entry
            found = entry.value
            if nodes.get(run_id, 1) > 1:
                found = {split_node(k)[1] for k in found}  # type: ignore[attr-defined]
            keys.update(found)  # type: ignore[arg-type]
        return sorted(keys)

    # Series --------------------------------------------------------------------------------
    def series(self, run_ids: Iterable[str], metrics: Iterable[str]) -> dict[tuple[str, str], Series]:
        """Full-resolution series for every (run, metric) pair; empty where a run lacks it."""
        run_ids = list(dict.fromkeys(run_ids))
        metrics = list(dict.fromkeys(metrics))
        rows = {row["run_id"]: row for row in self.run_rows(run_ids)}
        with self._lock:
            missing: dict[str, list[str]] = {}
            for run_id in run_ids:
                for metric in metrics:
                    if not self._fresh(self._series.get((run_id, metric))):
                        missing.setdefault(run_id, []).append(metric)
        for run_id, wanted in missing.items():
            loaded = self._load(rows[run_id], wanted)
            live = rows[run_id]["status"] in LIVE_STATUSES
            with self._lock:
                for metric in wanted:
                    self._series[(run_id, metric)] = _Entry(loaded[metric], self._clock(), live)
        with self._lock:
            return {(r, m): self._series[(r, m)].value  # type: ignore[misc]
                    for r in run_ids for m in metrics}

    def cached_pairs(self) -> int:
        with self._lock:
            return len(self._series)

    def _load(self, row: dict, wanted: list[str]) -> dict[str, Series]:
        run_id = row["run_id"]
        start = pd.Timestamp(row["start_time"]).timestamp()
        found: dict[str, Series] = {}
        # Only keys named <listener>/... can live in a trace; the script's own do not.
        # (a FINISHED run's listing is kept by trace_listing; a live one's is read again)
        listeners = (set(analysis.telemetry_listeners(run_id, tracking_uri=self.tracking_uri,
                                                      status=row["status"],
                                                      artifact_uri=row.get("artifact_uri")))
                     if any("/" in m for m in wanted) else set())
        by_listener: dict[str, list[str]] = {}
        for metric in wanted:
            stream = trace_of(metric)
            if stream in listeners:
                by_listener.setdefault(stream, []).append(metric)
        for listener, keys in by_listener.items():
            # The run's status and artifact folder are known: no round trip to the store.
            wide = analysis.read_telemetry(run_id, listener, tracking_uri=self.tracking_uri,
                                           columns=keys, status=row["status"],
                                           artifact_uri=row.get("artifact_uri"))
            times = wide["time"].to_numpy(dtype=np.float64)
            steps = (wide["step"].to_numpy(dtype=np.int64) if "step" in wide.columns
                     else np.arange(len(wide), dtype=np.int64))
            order = np.argsort(times, kind="stable")
            for key in keys:
                if key not in wide.columns:
                    continue
                values = wide[key].to_numpy(dtype=np.float64)[order]
                keep = ~np.isnan(values)
                found[key] = Series(run_id, key, start, times[order][keep] - start,
                                    steps[order][keep], values[keep])
        logged = {c[len("metric."):] for c, v in row.items()
                  if c.startswith("metric.") and not _is_missing(v)}
        history = [m for m in wanted if m not in found and m in logged]
        # a script's metric is stored under its own name: read without reading the run
        # first; a listener's or MLflow's (system/...) through load_series' name mapping
        own = [m for m in history if "/" not in m]
        rest = [m for m in history if "/" in m]
        longs = ([analysis.metric_history(run_id, own, start, tracking_uri=self.tracking_uri)] if own else []) + \
            ([analysis.load_series([run_id], rest, tracking_uri=self.tracking_uri)] if rest else [])
        for long in longs:
            for key, part in long.groupby("metric", sort=False):
                part = part.sort_values("seconds", kind="stable")
                found[str(key)] = Series(run_id, str(key), start,
                                         part["seconds"].to_numpy(dtype=np.float64),
                                         part["step"].to_numpy(dtype=np.int64),
                                         part["value"].to_numpy(dtype=np.float64))
        return {m: found[m] if m in found else _empty(run_id, m, start) for m in wanted}


def node_count(row: dict) -> int:
    """How many nodes the run ran on (its ``radtrack.nodes`` tag; docs/sheets.md
    "Multi-node rows"); 1 for a one-node run, or a tag that is not a whole number."""
    try:
        return max(int(str(row.get(NODES_TAG) or 1)), 1)
    except ValueError:
        return 1


def workload_number(value: object) -> int | None:
    """The workload number of a run row, whatever pandas made of it (Int64, float, NA)."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    return int(value)  # type: ignore[call-overload]


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def long_frame(series: dict[tuple[str, str], Series]) -> pd.DataFrame:
    """The cached series as the long frame radtrack.analysis works on (run_id, metric, seconds,
    time, step, value)."""
    parts = [pd.DataFrame({"run_id": s.run_id, "metric": s.metric, "seconds": s.seconds,
                           "time": pd.to_datetime(s.seconds + s.start, unit="s", utc=True),
                           "step": s.step, "value": s.value})
             for s in series.values() if len(s)]
    if not parts:
        return pd.DataFrame({"run_id": pd.Series(dtype=str), "metric": pd.Series(dtype=str),
                             "seconds": pd.Series(dtype=float),
                             "time": pd.Series(dtype="datetime64[ns, UTC]"),
                             "step": pd.Series(dtype="int64"), "value": pd.Series(dtype=float)})
    return pd.concat(parts, ignore_index=True)
