"""Co-location accounting at the end of a workload, stored where users look.

After every row of a workload has ended and its traces are stored, the launcher splits
each GPU's measured energy among the runs that shared it (radtrack/compute/attribution.py)
and records:

- on each row's run: ``summary/attribution/<scope>/energy_j`` (its attributed energy, with
  ``..._ci95_pct`` / ``..._ci95_flag``: its GPU's relative 95 % interval over the run,
  radtrack/compute/energy_figures.py, and the split's own bound in quadrature, flag 3
  ``split-assumed`` where the split has none validated: radtrack/compute/split_model.py;
  a GPU whose runs all have solo baselines with a logged throughput is split by the
  ``solo-model``, read from the store before this workload's figures are written),
  ``summary/attribution/<scope>/sm_share_pct`` (its mean share of the GPU), the series
  ``attribution/<scope>/attributed_power_w`` and ``attribution/<scope>/sm_share_pct`` (one
  point per window; stored under MLflow's ``system/`` prefix like the listeners' series,
  radtrack/vocab/schema.py), and the tags ``radtrack.attribution.<scope>`` (the method),
  ``.gpu`` (the physical GPU's UUID) and ``.note`` (why a run has no figure of its own);
- on the workload's parent run, per physical GPU ``gpu<i>`` (NVML index): the measured
  energy, ``idle`` and ``other`` (``summary/workload/gpu<i>/energy_j``, ``idle_energy_j``,
  ``other_energy_j``), their power series (``attribution/gpu<i>/idle_power_w``,
  ``other_power_w``), the tags ``radtrack.attribution.gpu<i>`` and ``.uuid``, the totals
  ``summary/workload/energy_j`` and ``summary/workload/duration_s``, and the artifact
  ``attribution/power.parquet``: every party's power per window and GPU, long form.

The host's CPU side (the devices whose energy series declare scope ``host``: RAPL's
``pkg<n>`` and ``pkg<n>/dram``) is accounted alike under its device name
(``summary/attribution/pkg0/energy_j`` on a row, ``summary/workload/pkg0/other_energy_j``
on the parent, tag ``radtrack.attribution.pkg0`` = ``process-cpu-time``): co-located runs
share it by their process trees' CPU time (radtrack/compute/cpu_energy_share.py; no SM
share is stored for it), a solo run keeps it whole.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from radtrack.compute import split_model
from radtrack.compute.attribution import (
    DEFAULT_MPS_RULE,
    IDLE,
    MPS_RULES,
    OTHER,
    GpuAccount,
    GpuUse,
    account,
)
from radtrack.compute.colocation import WorkloadRuns, workload_totals
from radtrack.compute.cpu_energy_share import mark_host_uses
from radtrack.compute.energy_error import combine
from radtrack.compute.energy_figures import flag_code, gpu_models, span_interval
from radtrack.compute.gpu_uses import run_uses
from radtrack.errors import RadtrackError
from radtrack.postrun.footprint import resolve
from radtrack.store.tracking import set_tags
from radtrack.vocab import schema
from radtrack.vocab.device_identity import device_fact
from radtrack.vocab.schema import POWER_ARTIFACT, stored_key

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from radtrack.postrun.end_inputs import EndRow as Row

MPS_RULE_ENV = "RADTRACK_MPS_ATTRIBUTION"


def mps_rule() -> str:
    """The rule splitting an MPS server's activity among its clients (env, else default)."""
    rule = os.environ.get(MPS_RULE_ENV, "").strip() or DEFAULT_MPS_RULE
    if rule not in MPS_RULES:
        raise RadtrackError(f"{MPS_RULE_ENV}={rule!r}: use one of {', '.join(MPS_RULES)}")
    return rule


@dataclass
class _Input:
    row: Row
    scope: str  # the GPU as the run sees it
    use: GpuUse


def _baselines(stored: WorkloadRuns | None) -> tuple[dict[str, float], dict[str, tuple[float, int]]]:
    """From the store read before accounting: run id -> solo-equivalent power, and run id
    -> (CV % of its solo J per unit, solo runs) (radtrack/compute/split_model.py)."""
    if stored is None:
        return {}, {}
    from radtrack.compute.interference import interference

    try:
        inter = interference(stored.runs, stored.summaries)
    except (KeyError, ValueError, TypeError):  # a store without the columns it needs: no model
        return {}, {}
    return split_model.rates(inter), split_model.solo_spread(inter, stored.summaries)


def account_workload(client: MlflowClient, parent_id: str, rows: list[Row],
                     rule: str | None = None, baselines: WorkloadRuns | None = None
                     ) -> dict[str, GpuAccount]:
    """Account every GPU the workload's rows used and store the results; GPU UUID ->
    accounting (empty when no row has GPU readings, e.g. a CPU workload). ``baselines``:
    the workload's rows and their scripts' solo runs as stored (read_workload_runs): where
    every run on a GPU has a solo baseline and a logged throughput, that GPU's split is
    ``solo-model`` (radtrack/compute/split_model.py); otherwise the signal-based split,
    flagged ``split-assumed``."""
    inputs = []
    for row in rows:
        if row.sink is None or not row.started:
            continue
        end = row.ended or time.time()
        uses = run_uses(row.run_id, row.sink.frames, row.tags, row.spec.collocation,
                        row.started, end)
        mark_host_uses(uses, row.sink.frames)  # the host's CPU side: split by CPU time
        inputs += [_Input(row, scope, use) for scope, use in uses.items()]
    if not inputs:
        return {}
    start = min(i.use.start for i in inputs)
    end = max(i.use.end for i in inputs)
    if not end > start:
        return {}
    accounts = account([i.use for i in inputs], start, end, mps_rule=rule or mps_rule())
    q, spread = _baselines(baselines)
    spans = {i.use.run: (i.use.start, i.use.end) for i in inputs}
    accounts = {gpu: split_model.bound_all(split_model.resplit(acc, q, spans), spread, q, spans)
                for gpu, acc in accounts.items()}
    for item in inputs:
        _record_row(client, item, accounts[item.use.gpu])
    _record_parent(client, parent_id, inputs, accounts, start, end)
    return accounts


def _metrics(points: list[tuple[str, float, float, int]]) -> list:
    from radtrack.store.entities import Metric

    return [Metric(k, float(v), int(t * 1000), step) for k, v, t, step in points
            if np.isfinite(v)]


def _log(client: MlflowClient, run_id: str, metrics: list) -> None:
    for i in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[i:i + 1000])


def _attributed_interval(item: _Input, acc: GpuAccount) -> list[tuple[str, float]]:
    """The attributed energy's 95 % interval and flag: its GPU's counter interval and the
    split's bound added in quadrature (split_model.with_split); an assumed split is flagged
    ``split-assumed`` with the worst deviation measured for it."""
    key = schema.attribution_summary_key(item.scope, "energy_j")
    ci = (span_interval(item.row.sink.frames, item.scope, item.use.start, item.use.end,
                        gpu_models(item.row.tags).get(item.scope))
          if item.row.sink is not None else None)
    pct, flag = split_model.with_split(ci.ci95_pct if ci is not None else float("nan"),
                                       flag_code(ci) if ci is not None else 0.0, acc, item.use.run)
    if not np.isfinite(pct):
        return []
    return [(schema.ci_key(key), pct), (schema.ci_flag_key(key), flag)]


def _record_row(client: MlflowClient, item: _Input, acc: GpuAccount) -> None:
    run, scope = item.use.run, item.scope
    widths = np.diff(acc.edges)
    lo = np.maximum(acc.edges[:-1], item.use.start)
    hi = np.minimum(acc.edges[1:], item.use.end)
    inside = np.clip(hi - lo, 0.0, None)
    energy = acc.energy[run].to_numpy()
    # its share while it ran: the account's share of a window the run held only in part
    # is over the whole window (attribution._activity weighs it by the run's part)
    with np.errstate(all="ignore"):
        share = np.where(inside > 0, acc.share[run].to_numpy() * widths / np.where(inside > 0, inside, 1.0), 0.0)
    now = time.time()
    key = schema.attribution_summary_key(scope, "energy_j")
    points = [(key, energy.sum(), now, 0)]
    points += [(k, v, now, 0) for k, v in _attributed_interval(item, acc)]
    if inside.sum() > 0 and not acc.host:  # a host device's share is CPU time, not SM time
        points.append((schema.attribution_summary_key(scope, "sm_share_pct"),
                       float((share * inside).sum() / inside.sum()), now, 0))
    step = 0
    for k in np.flatnonzero(inside > 0):
        # over the run's part of the window (the windows are the workload's; a run starts
        # or ends inside one): its power there, at the middle of that part, in its span
        mid = (lo[k] + hi[k]) / 2
        points.append((stored_key(schema.attribution_key(scope, "attributed_power_w")), energy[k] / inside[k], mid, step))
        if not acc.host:
            points.append((stored_key(schema.attribution_key(scope, "sm_share_pct")), share[k], mid, step))
        step += 1
    _log(client, run, _metrics(points))
    tags = {schema.attribution_tag(scope): acc.method,
            schema.attribution_tag(scope, "gpu"): acc.gpu}
    if run in acc.notes:
        tags[schema.attribution_tag(scope, "note")] = acc.notes[run]
    set_tags(client, run, tags)
    item.row.tags.update(tags)


def _labels(inputs: list[_Input]) -> dict[str, str]:
    """GPU UUID -> ``gpu<i>`` with i the host's index of it, as the runs' GPU listeners
    recorded it (radtrack/vocab/device_identity.py); in order of appearance where the index is unknown. A device of
    the host's CPU side (``host:pkg0``) keeps its device name (``pkg0``, ``pkg0/dram``)."""
    labels: dict[str, str] = {}
    for item in inputs:
        if item.use.host and item.use.gpu not in labels:
            taken = set(labels.values())
            labels[item.use.gpu] = next(name for n in range(len(inputs) + 1)
                                        if (name := item.scope + (f"_{n}" if n else "")) not in taken)
    for item in inputs:
        index = device_fact(item.row.tags, item.scope, "index")
        if item.use.gpu not in labels and index is not None:
            labels[item.use.gpu] = f"gpu{index}"
    for item in inputs:
        if item.use.gpu not in labels:
            taken = set(labels.values())
            labels[item.use.gpu] = next(f"gpu{n}" for n in range(len(inputs) + 1) if f"gpu{n}" not in taken)
    return labels


def power_table(inputs: list[_Input], accounts: dict[str, GpuAccount]) -> pd.DataFrame:
    """Every party's power per window and GPU, long form (the parent's artifact)."""
    labels = _labels(inputs)
    names = {i.use.run: i.row.spec.run_name or i.row.spec.default_run_name() for i in inputs}
    parts = []
    for gpu, acc in accounts.items():
        widths = np.diff(acc.edges)
        for party in acc.energy.columns:
            energy = acc.energy[party].to_numpy()
            share = (acc.share[party].to_numpy() if party in acc.share and not acc.host
                     else np.full(len(energy), np.nan))  # a host device's: CPU time, not SM
            parts.append(pd.DataFrame({
                "time": acc.edges[:-1], "end": acc.edges[1:], "gpu": labels[gpu], "gpu_uuid": gpu,
                "party": names.get(party, party),
                "run_id": party if party not in (IDLE, OTHER) else "",
                "power_w": energy / widths, "energy_j": energy, "sm_share_pct": share}))
    return pd.concat(parts, ignore_index=True)


def _record_parent(client: MlflowClient, parent_id: str, inputs: list[_Input],
                   accounts: dict[str, GpuAccount], start: float, end: float) -> None:
    labels = _labels(inputs)
    now = time.time()
    points = [(schema.workload_key("energy_j"), sum(a.gpu_energy_j for a in accounts.values()), now, 0),
              (schema.workload_key("duration_s"), end - start, now, 0)]
    tags = {}
    parts: list[tuple[float, float]] = []
    for gpu, acc in accounts.items():
        label = labels[gpu]
        points += [(schema.workload_key(label, "energy_j"), acc.gpu_energy_j, now, 0),
                   (schema.workload_key(label, "idle_energy_j"), acc.energy_j(IDLE), now, 0),
                   (schema.workload_key(label, "other_energy_j"), acc.energy_j(OTHER), now, 0)]
        # the GPU's 95 % interval over the workload; its idle and other shares carry the
        # same relative interval (radtrack/compute/energy_figures.py)
        ci = next((c for item in inputs if item.use.gpu == gpu and item.row.sink is not None
                   and (c := span_interval(item.row.sink.frames, item.scope, float(acc.edges[0]),
                                           float(acc.edges[-1]),
                                           gpu_models(item.row.tags).get(item.scope))) is not None), None)
        parts.append((acc.gpu_energy_j, ci.ci95_pct if ci is not None else float("nan")))
        if ci is not None:
            for part in ("energy_j", "idle_energy_j", "other_energy_j"):
                key = schema.workload_key(label, part)
                points += [(schema.ci_key(key), ci.ci95_pct, now, 0),
                           (schema.ci_flag_key(key), flag_code(ci), now, 0)]
        power = acc.power_w()
        for step, (mid, idle, other) in enumerate(zip(power.index, power[IDLE], power[OTHER],
                                                      strict=True)):
            points += [(stored_key(schema.attribution_key(label, "idle_power_w")), idle, mid, step),
                       (stored_key(schema.attribution_key(label, "other_power_w")), other, mid, step)]
        tags[schema.attribution_tag(label)] = acc.method
        tags[schema.attribution_tag(label, "uuid")] = gpu
    total_ci = combine(parts)
    if total_ci == total_ci:
        points.append((schema.ci_key(schema.workload_key("energy_j")), total_ci, now, 0))
    _log(client, parent_id, _metrics(points))
    set_tags(client, parent_id, tags)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(POWER_ARTIFACT).name
        power_table(inputs, accounts).to_parquet(path, index=False)
        client.log_artifact(parent_id, str(path), str(Path(POWER_ARTIFACT).parent))


def record_workload_totals(client: MlflowClient, parent_id: str, workload: int | str,
                           stored: WorkloadRuns | None) -> dict[str, object] | None:
    """STP, ANTT, work and energy vs serial of a co-located workload on its parent run,
    against the solo runs of its scripts already in the experiment (compute/colocation.py),
    from ``stored``: what radtrack/analysis/workload_runs.py ``read_workload_runs`` read.
    Returns the workload's row of that table (None for a single-row workload)."""
    if stored is None:
        return None
    parent = stored.runs[stored.runs["run_id"] == parent_id]
    launch = parent.get(f"tag.{schema.LAUNCH_ID}")
    row = workload_totals(stored, workload, None if launch is None or parent.empty
                          else str(launch.iloc[0]))
    if row is None:
        return None
    now = time.time()
    points = [(schema.workload_key(key), row[key], now, 0)
              for key in ("stp", "antt", "serial_energy_j", "energy_vs_serial_pct", "stp_lo", "stp_hi",
                          "antt_lo", "antt_hi", "energy_vs_serial_pct_lo", "energy_vs_serial_pct_hi")
              if isinstance(row.get(key), float)]
    unit = row.get("work_unit")
    if isinstance(unit, str) and unit:
        points += [(schema.workload_key(f"work_{unit}"), row["work"], now, 0),
                   (schema.workload_key(f"energy_per_{unit}_j"), row["energy_per_unit_j"], now, 0)]
    _log(client, parent_id, _metrics(points))
    if row.get("note"):
        set_tags(client, parent_id, {schema.WORKLOAD_NOTE: str(row["note"])})
    return row


def record_footprint(client: MlflowClient, parent_id: str, rows: list[Row],
                     accounts: dict[str, GpuAccount]) -> dict[str, float]:
    """CO2-equivalent of each run's attributed energy and of the workload's measured GPU
    energy (idle and other included) at the carbon intensity in force (radtrack/postrun/footprint.py),
    with the figures and their source as tags. run id (and ``workload``) -> grams."""
    out: dict[str, float] = {}
    now = time.time()
    first = None
    for row in rows:
        carbon = resolve(row.spec.carbon_intensity, row.spec.pue, row.spec.carbon_source)
        if carbon is None:
            continue
        first = first or carbon
        joules = [a.energy_j(row.run_id) for a in accounts.values() if row.run_id in a.energy]
        set_tags(client, row.run_id, carbon.tags())
        if joules:
            out[row.run_id] = carbon.co2e_g(sum(joules))
            _log(client, row.run_id, _metrics([(schema.CO2E_KEY, out[row.run_id], now, 0)]))
    if first is not None and accounts:
        out["workload"] = first.co2e_g(sum(a.gpu_energy_j for a in accounts.values()))
        set_tags(client, parent_id, first.tags())
        _log(client, parent_id, _metrics([(schema.workload_key("co2e_g"), out["workload"], now, 0)]))
    return out
