"""What watching a row cost, recorded on its run as ``summary/monitoring/*`` metrics.

- per listener (``summary/monitoring/<listener>/...``): ``cpu_s``, the CPU seconds (user +
  system) of the processes it ran in, from ``os.wait4``'s rusage of each (restarts
  included; radtrack/run/listen.py ListenerPopen); a process shared by several listeners
  (smi+dcgm) is shared out in proportion to the CPU each listener reported spending in
  its own readings and lines (its ``Stats`` line at a clean stop), equally without one;
  ``samples``, the samples the launcher took from it; ``missed``, sampling deadlines it
  skipped because a reading ran late (samples never taken);
- for the row: ``launcher_cpu_s``, the launcher process's whole CPU over the row's span
  (all its threads: MLflow's import and the run's creation when they overlap the script,
  the intake below, the other rows of its workload; what the busy-host check of
  radtrack/compute/result_checks.py counts as radtrack's own, not the host's other work);
  ``listeners_cpu_s`` (their sum), ``store_cpu_s`` (the launcher's storing:
  the reader threads that parse and spool the listeners' lines, the shipper thread until
  the end of the run, and the end-of-run shipping and trace writing), ``cpu_pct`` (both
  over the row's span, % of one core: its listeners run for its span only, stopped as its
  process ends while its partners run on: radtrack/run/supervise.py), ``points``
  (listener metric points stored),
  ``spool_bytes`` (the listeners' lines as received) and ``missed`` (all listeners).

Nothing here reads the store or waits: it is arithmetic over what the launcher already
holds, a few system calls at the end of a row.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from radtrack.store.spool import SPOOL_SUFFIX
from radtrack.vocab import schema

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.run.listen import ListenerPopen, ListenerProc
    from radtrack.run.rows import Row


@dataclass
class ListenerCost:
    cpu_s: float = 0.0
    samples: int = 0
    missed: int = 0
    processes: int = 0  # processes it ran in (1 + restarts; shared ones count for each)


def thread_cpu_s(thread: threading.Thread | None) -> float:
    """CPU seconds a live thread of this process has used (0 for none or an ended one)."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return 0.0
    with contextlib.suppress(OSError, AttributeError, ValueError):
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return 0.0


def listener_costs(lprocs: list[ListenerProc]) -> dict[str, ListenerCost]:
    """Each listener's CPU, samples and missed deadlines, from every process it ran in
    (they have all ended: call after the listeners stopped)."""
    out = {lp.name: ListenerCost() for lp in lprocs}
    seen: dict[int, ListenerPopen] = {}
    for lp in lprocs:
        for proc in lp.spawned:
            seen.setdefault(id(proc), proc)
    for proc in seen.values():
        total = proc.cpu_s
        if total is None:
            continue  # never reaped (still running): nothing exact to say
        names = [n for n in proc.members if n in out] or list(proc.members)
        stats = proc.stats()
        own = {n: stats[n].cpu_s for n in names if n in stats}
        spent = sum(own.values())
        for n in names:
            share = own.get(n, 0.0) / spent if spent > 0 and len(own) == len(names) else 1 / len(names)
            cost = out.setdefault(n, ListenerCost())
            cost.cpu_s += total * share
            cost.processes += 1
            if n in stats:
                cost.missed += stats[n].missed
    for lp in lprocs:
        out[lp.name].samples = lp.sink.emitted(lp.name)
    return out


def intake_cpu_s(lprocs: list[ListenerProc]) -> float:
    """CPU seconds of the launcher's reader threads (parsing and spooling the lines)."""
    seen = {id(p): p for lp in lprocs for p in lp.spawned}
    return sum(p.intake_cpu_s or 0.0 for p in seen.values())


@dataclass
class Meter:
    """The storing side of a row's cost, read around the sink's close: make it just before
    ``row.sink.close()``, call :meth:`closed` right after."""

    row: Row
    shipper_cpu_s: float = 0.0
    spool_bytes: int = 0
    close_cpu_s: float = 0.0
    launcher_cpu_s: float | None = None  # the launcher process's CPU over the row's span
    _t0: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        sink = self.row.sink
        if sink is not None:
            self.shipper_cpu_s = thread_cpu_s(getattr(sink.shipper, "_thread", None))
            with contextlib.suppress(OSError):
                self.spool_bytes = sum(p.stat().st_size for p in sink.dir.glob(f"*{SPOOL_SUFFIX}"))
        self._t0 = time.thread_time()
        if self.row.launcher_cpu0 is not None and self.row.launcher_cpu1 is not None:
            self.launcher_cpu_s = self.row.launcher_cpu1 - self.row.launcher_cpu0

    def closed(self) -> None:
        self.close_cpu_s = time.thread_time() - self._t0

    def values(self, duration_s: float) -> dict[str, float]:
        """The ``summary/monitoring/*`` metrics of the row: key -> value."""
        row = self.row
        per = listener_costs(row.lprocs)
        out: dict[str, float] = {}
        for name, c in per.items():
            out[schema.monitoring_key(name, "cpu_s")] = round(c.cpu_s, 6)
            out[schema.monitoring_key(name, "samples")] = float(c.samples)
            out[schema.monitoring_key(name, "missed")] = float(c.missed)
        listeners = sum(c.cpu_s for c in per.values())
        store = intake_cpu_s(row.lprocs) + self.shipper_cpu_s + self.close_cpu_s
        out[schema.MONITORING_LISTENERS_CPU] = round(listeners, 6)
        out[schema.MONITORING_STORE_CPU] = round(store, 6)
        if self.launcher_cpu_s is not None:
            out[schema.MONITORING_LAUNCHER_CPU] = round(self.launcher_cpu_s, 6)
        if duration_s > 0:
            out[schema.MONITORING_CPU_PCT] = round(100 * (listeners + store) / duration_s, 4)
        out[schema.MONITORING_POINTS] = float(row.sink.stored if row.sink is not None else 0)
        out[schema.MONITORING_SPOOL_BYTES] = float(self.spool_bytes)
        out[schema.MONITORING_MISSED] = float(sum(c.missed for c in per.values()))
        return out


def points(row: Row, meter: Meter) -> list[tuple[str, float, int, int]]:
    """The row's ``summary/monitoring/*`` metrics as (key, value, timestamp ms, step 0),
    stamped at the row's end: stored with the rest of the row's end in one call
    (radtrack/run/row_end.py), or by :func:`record`."""
    released = row.folder / "released"
    try:
        start = row.started or float(released.read_text())
    except (OSError, ValueError):
        start = 0.0
    end = row.ended or time.time()
    return [(k, v, int(end * 1000), 0) for k, v in meter.values(end - start if start else 0.0).items()]


def record(client: MlflowClient, row: Row, meter: Meter) -> None:
    """Store the row's ``summary/monitoring/*`` metrics on its run (one log_batch); a
    failure is said, never fatal: the cost is a note about the run, not its data."""
    from radtrack.store.entities import Metric

    try:
        client.log_batch(row.run_id, metrics=[Metric(*p) for p in points(row, meter)])
    except Exception as exc:  # noqa: BLE001
        said(row, exc)


def said(row: Row, exc: BaseException) -> None:
    """The one line for a cost that could not be stored."""
    import sys

    # the launcher's line format (start.say), not imported: start imports finish, which imports this
    print(f"[radtrack] {row.spec.letter}: could not store what monitoring cost: "
          f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
