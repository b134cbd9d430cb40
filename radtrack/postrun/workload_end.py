"""The end of a workload, in one place: what both the launcher (radtrack/run/experiment.py)
and ``radtrack sync`` (radtrack/sync_command.py, from the rows' spools:
radtrack/postrun/synced.py) run once every row of a workload has ended.

In order: the workload run's placement logs and start skew (:func:`store_parent`); then
:func:`account`: co-location accounting and workload totals (radtrack/postrun/accounting.py),
the footprint, and each row's code windows (radtrack/postrun/window_energy.py); then
:func:`bind_script_runs`: the script's own MLflow runs get their spans' telemetry
(radtrack/postrun/script_runs.py). Accounting, footprint, windows and binding report their
own failures and never raise: what was recorded stays as it is.

The input is typed: :class:`WorkloadEnd` holds the workload run's id, the store, the rows
(anything with :class:`EndRow`'s fields: the launcher's rows, or the rows sync rebuilds from
spools), the placement artifacts, where messages go, and the one reader the totals need
(the workload's solo baselines, only in the store: the caller passes it in, so that this
step imports no reader).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from radtrack.postrun.end_inputs import EndRow
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.compute.attribution import GpuAccount
    from radtrack.compute.colocation import WorkloadRuns
    from radtrack.store.handle import StoreHandle


#: (experiment, workload, store) -> the workload's stored runs and solo baselines, None for
#: a workload of fewer than two rows (radtrack/analysis/workload_runs.py read_workload_runs,
#: handed down from the top: radtrack/stored_reader.py)
StoredReader = Callable[[str, int, str], "WorkloadRuns | None"]


@dataclass
class WorkloadEnd:
    """Everything the end of one workload needs."""

    parent_id: str
    store: StoreHandle  # the store the workload's runs are in (radtrack/store/handle.py)
    rows: list[EndRow]
    read_stored: StoredReader | None  # None: every workload of the launch has one row
    artifacts: list[Path] = field(default_factory=list)
    log: Callable[[str], None] = print

    @property
    def uri(self) -> str:
        return self.store.uri


def store_parent(client: MlflowClient, end: WorkloadEnd) -> None:
    """The workload run's placement artifacts and start skew; raises when the store is away
    (the accounting and code windows that follow need it)."""
    for path in end.artifacts:
        if Path(path).exists():
            client.log_artifact(end.parent_id, str(path), schema.PLACEMENT_DIR)
    log_skew(client, end.parent_id, end.rows)


def log_skew(client: MlflowClient, parent_id: str, rows: list[EndRow]) -> None:
    """How far apart the rows' scripts were released (``released`` in each row's folder)."""
    from radtrack.store.entities import Metric, RunTag

    times = []
    for row in rows:
        f = row.folder / "released"
        if f.exists():
            times.append(float(f.read_text()))
    if len(times) < 1:
        return
    skew_ms = (max(times) - min(times)) * 1000
    # the tag and the metric in one call (one round trip to a server)
    client.log_batch(parent_id, metrics=[Metric("start_skew_ms", skew_ms, int(time.time() * 1000), 0)],
                     tags=[RunTag("radtrack.start_skew_ms", f"{skew_ms:.3f}")])


def account(client: MlflowClient, end: WorkloadEnd) -> dict[str, GpuAccount]:
    """Co-location accounting, workload totals, the footprint and code windows; GPU UUID (or
    device) -> accounting. A failure here is reported and leaves every recorded sample and
    status as they are."""
    from radtrack.compute.colocation import figures_line
    from radtrack.postrun.accounting import (
        account_workload,
        record_footprint,
        record_workload_totals,
    )
    from radtrack.postrun.window_energy import record_row_windows

    rows, say, parent_id = end.rows, end.log, end.parent_id
    first = rows[0].spec
    name = f"{first.experiment}-{first.workload}"
    accounts: dict[str, GpuAccount] = {}
    try:
        # the solo baselines as stored before this workload's figures: the solo-model split
        # (radtrack/compute/split_model.py) needs each row's solo J per unit and throughput
        before = None
        if len(rows) > 1 and end.read_stored is not None:
            try:
                before = end.read_stored(first.experiment, first.workload, end.uri)
            except Exception as exc:  # noqa: BLE001 - without baselines the signal's split stays
                say(f"{name}: solo baselines not read ({type(exc).__name__}: {exc}): "
                    "the split stays the signal's, flagged split-assumed")
        accounts = account_workload(client, parent_id, rows, baselines=before)
        for gpu, acc in accounts.items():
            parts = ", ".join(f"{r.spec.letter} {acc.energy_j(r.run_id):.0f} J" for r in rows
                              if r.run_id in acc.energy)
            device = f"host {gpu}" if acc.host else f"GPU {gpu[:12]}"  # <host>:pkg0, or a GPU's UUID
            say(f"{name}: {device} {acc.gpu_energy_j:.0f} J{interval(rows, acc)} ({acc.method}): "
                f"{parts}, other {acc.energy_j('other'):.0f} J, idle {acc.energy_j('idle'):.0f} J")
        if len(rows) > 1 and end.read_stored is not None:
            stored = end.read_stored(first.experiment, first.workload, end.uri)
            totals = record_workload_totals(client, parent_id, first.workload, stored)
            stp = totals.get("stp") if totals else None
            if isinstance(stp, float) and stp == stp:  # nan: no solo baseline
                for line in figures_line(totals):
                    say(f"{name}: {line}")
            elif totals and totals.get("note"):
                say(f"{name}: {totals['note']}")
            else:
                say(f"{name}: no stp, antt, energy_vs_serial_pct: no solo baseline of these scripts in "
                    f"{first.experiment!r}")
    except Exception as exc:  # noqa: BLE001 - accounting never costs the recorded runs
        say(f"{name}: co-location accounting failed: {type(exc).__name__}: {exc}")
    try:
        grams = record_footprint(client, parent_id, rows, accounts)
        if "workload" in grams:  # in the owner's words, under the name the report and page use
            said = describe(schema.workload_key("co2e_g"))
            say(f"{name}: {said.name} {grams['workload']:.2f} {said.unit_text} (co2e_g)")
    except Exception as exc:  # noqa: BLE001 - as above
        say(f"{name}: footprint failed: {type(exc).__name__}: {exc}")
    for row in rows:
        try:
            table = record_row_windows(client, row, accounts)
            if not table.empty:
                say(f"{row.spec.letter}: {len(table)} code window(s) stored "
                    "(radtrack report: Code windows, table windows)")
        except Exception as exc:  # noqa: BLE001 - as above
            say(f"{row.spec.letter}: storing code windows failed: {type(exc).__name__}: {exc}")
    return accounts


def bind_script_runs(client: MlflowClient, end: WorkloadEnd,
                     accounts: Mapping[str, GpuAccount]) -> None:
    """The script's own MLflow runs get their spans' telemetry (radtrack/postrun/script_runs.py)."""
    from radtrack.postrun.footprint import resolve
    from radtrack.postrun.script_runs import bind_row

    say = end.log
    for row in end.rows:
        try:
            carbon = resolve(row.spec.carbon_intensity, row.spec.pue, row.spec.carbon_source)
            bound = bind_row(row, client, end.uri, dict(accounts), carbon, say)
            ok = [b for b in bound if not b.error]
            if ok:
                names = ", ".join(b.span.name or b.span.run_id for b in ok)
                say(f"{row.spec.letter}: telemetry bound to the script's run(s): {names}")
        except Exception as exc:  # noqa: BLE001 - the row run keeps everything regardless
            say(f"{row.spec.letter}: binding telemetry to the script's runs failed: "
                f"{type(exc).__name__}: {exc}")


def interval(rows: list[EndRow], acc: GpuAccount) -> str:
    """`` ±x.x %`` (and why it is wide) of a GPU's energy over the workload, the 95 % interval
    every share of it carries too (radtrack/compute/energy_figures.py); "" without one."""
    from radtrack.compute.energy_figures import gpu_models, span_interval

    for row in rows:
        scope = next((k.removeprefix(schema.ATTRIBUTION_TAG_PREFIX).removesuffix(".gpu")
                      for k, v in row.tags.items()
                      if k.startswith(schema.ATTRIBUTION_TAG_PREFIX) and k.endswith(".gpu")
                      and v == acc.gpu), None)
        if scope is None or row.sink is None:
            continue
        ci = span_interval(row.sink.frames, scope, float(acc.edges[0]), float(acc.edges[-1]),
                           gpu_models(row.tags).get(scope))
        if ci is not None:
            return f" ±{ci.ci95_pct:.1f} %" + (f", {ci.reason}" if ci.reason else "")
    return ""
