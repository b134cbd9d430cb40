"""Co-location interference: each co-located run against the solo run(s) of its configuration.

A co-located run is a row of a workload with more than one row; its baseline is the
FINISHED solo runs of the same File + params (:mod:`radtrack.compute.configs`) on the same
host, in its own experiment, else in any other experiment of ``runs``, or those of an
explicit baseline experiment (:mod:`radtrack.compute.baselines` says the rule). Repeated
solo runs are averaged; with repeats (:func:`radtrack.compute.variability.variability`)
the slowdown and the energy per unit change get a 95 % interval (``slowdown_lo``/``_hi``,
``energy_per_unit_change_pct_lo``/``_hi``: a t interval on the log of the ratio, the delta
method over the repeats' coefficients of variation, ``interval_df`` its degrees of freedom);
without repeats ``interval_note`` says so and how to declare them (:data:`NO_REPEATS`).

Slowdown is solo throughput / co-located throughput when both logged the same
throughput rate (``throughput_<unit>_per_s`` or ``throughput_<prefix>flops``; a
time-limited run keeps its duration but loses throughput), else co-located duration /
solo duration. Energy is the run's attributed energy (``energy_j`` of the summary:
its measured share of each shared GPU, radtrack/compute/attribution.py), never the
whole device's; a co-located run recorded without attribution gets no energy figures.

A duration is no measure of work where a run was stopped at its time limit (MaxTime): both
spans are then the limit. A duration-based slowdown (and energy per run) with such a run
on either side is left blank, ``note`` naming the limit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.compute.baselines import choose, is_colocated, missing_note, solo_pool
from radtrack.compute.configs import with_config, without_parents
from radtrack.compute.summary import coefficient_of_variation, work_unit
from radtrack.compute.variability import (
    group_members,
    group_spread,
    log_bounds,
    log_ratio_spread,
)
from radtrack.vocab import schema

PREFERRED_THROUGHPUT = "throughput_samples_per_s_mean"
COLUMNS = [
    "run_id", "run_name", "experiment", "workload", "letter", "collocation", "file", "params",
    "solo_run_ids", "solo_runs", "baseline_experiment", "baseline_rule", "baseline_mismatch",
    "slowdown", "slowdown_lo", "slowdown_hi", "slowdown_basis", "duration_s", "solo_duration_s",
    "throughput", "solo_throughput", "work_unit", "energy_j", "attribution", "energy_per_unit_j",
    "solo_energy_per_unit_j", "energy_per_unit_change_pct", "energy_per_unit_change_pct_lo",
    "energy_per_unit_change_pct_hi", "interval_df", "interval_note", "note",
]
#: where a figure has no interval for want of repeats: what to do (docs/sheets.md)
NO_REPEATS = ("no repeats of the solo or the co-located configuration, so no 95 % interval: "
              "declare repeats in the sheet by writing the solo row and the co-located "
              "workload again under other Workload numbers (same File, Params and Collocation; "
              "docs/sheets.md, Repeats)")
_STOPPED = f"tag.{schema.STOPPED_BY}"


def _throughput_columns(summary: pd.DataFrame) -> list[str]:
    cols = [c for c in summary.columns if c.endswith("_mean")
            and work_unit(c.removesuffix("_mean")) is not None]
    return sorted(cols, key=lambda c: (c != PREFERRED_THROUGHPUT, c))


def _unit(column: str) -> str:
    return work_unit(column.removesuffix("_mean")) or "run"


def _time_capped(runs: pd.DataFrame, run_ids: list[str]) -> list[str]:
    """``<name> (MaxTime 0.05 min)`` for each of ``run_ids`` stopped at its time limit."""
    if _STOPPED not in runs:
        return []
    capped = runs[runs["run_id"].isin(run_ids) & (runs[_STOPPED] == "max_time")]
    limit = capped.get("param.max_time", pd.Series(None, index=capped.index))
    return [f"{name} (MaxTime {m} min)" if isinstance(m, str) and m else str(name)
            for name, m in zip(capped["run_name"], limit, strict=True)]


def _per_unit(stats: pd.DataFrame, run_ids: list[str], column: str | None) -> pd.Series:
    """Each run's energy per unit of work (per run where ``column`` is None)."""
    rows = stats.reindex(run_ids)
    energy = pd.to_numeric(rows.get("energy_j", pd.Series(np.nan, index=rows.index)), errors="coerce")
    if column is None:
        return energy
    return energy / (pd.to_numeric(rows[column], errors="coerce") * rows["duration_s"])


def interference(runs: pd.DataFrame, summary: pd.DataFrame, *, baseline: str | None = None,
                 spread: pd.DataFrame | None = None, elsewhere: bool = False) -> pd.DataFrame:
    """One row per co-located run: slowdown and energy-per-unit change against its solo runs.

    ``runs`` is a :func:`load_runs` frame of the experiment (all workloads, so the solo
    runs are there) and of any solo runs of other experiments to look among
    (:func:`radtrack.compute.baselines.load_candidates`), ``summary`` the
    :func:`summarize_runs` frame of the same runs; ``baseline`` an experiment (name or id)
    to take every baseline from; ``spread`` the :func:`variability` table of the same runs
    (the slowdown's interval); ``elsewhere``: the caller looked in every other experiment
    of the store too. A run without a solo baseline gets NaN figures and a ``note``
    saying what is missing and where it was looked for.
    """
    runs = without_parents(runs)
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    stats = summary.set_index("run_id")
    runs = with_config(runs)
    tput_cols = _throughput_columns(summary)
    pool = solo_pool(runs)
    pool = pool[pool["run_id"].isin(stats.index)]
    rows = []
    for _, run in runs[is_colocated(runs)].iterrows():
        if run["run_id"] not in stats.index:
            continue
        chosen = choose(run, pool, baseline)
        me = stats.loc[run["run_id"]]
        energy = float(me.get("energy_j", np.nan))
        row = {c: run.get(c) for c in ("run_id", "run_name", "experiment", "workload", "letter",
                                       "collocation", "file", "params")}
        row.update(solo_run_ids=",".join(chosen.run_ids), solo_runs=chosen.describe(),
                   baseline_experiment=",".join(dict.fromkeys(chosen.experiments)),
                   baseline_rule=chosen.how, baseline_mismatch=chosen.mismatch,
                   duration_s=me["duration_s"], energy_j=energy,
                   attribution=me.get("attribution", ""), note="")
        if not chosen.run_ids:
            row["note"] = missing_note(run, baseline, elsewhere)
            rows.append(row)
            continue
        solo = stats.loc[chosen.run_ids]
        row["solo_duration_s"] = float(solo["duration_s"].mean())
        column = next((c for c in tput_cols if not np.isnan(me.get(c, np.nan))
                       and solo[c].notna().any()), None)
        if column is not None:
            row.update(throughput=me[column], solo_throughput=float(solo[column].mean()),
                       slowdown_basis=column.removesuffix("_mean"), work_unit=_unit(column))
            row["slowdown"] = row["solo_throughput"] / row["throughput"]
            measure = column.removesuffix("_mean")
            work, solo_work = (me[column] * me["duration_s"],
                               solo[column] * solo["duration_s"])
        else:
            row.update(slowdown_basis="duration_s", work_unit="run")
            measure = "duration_s"
            work, solo_work = 1.0, pd.Series(1.0, index=solo.index)
            capped = _time_capped(runs, [run["run_id"], *chosen.run_ids])
            if capped:
                # both spans are the limit, not the work: a ratio of them is no slowdown
                row["note"] = (f"slowdown blank: {', '.join(capped)} "
                               f"{'each ' if len(capped) > 1 else ''}ended at its time limit, so "
                               "a span measures the limit, not the work; log a throughput "
                               "(throughput_<unit>_per_s) to compare rates")
                rows.append(row)
                continue
            row["slowdown"] = row["duration_s"] / row["solo_duration_s"]
        solo_spread = group_spread(spread, chosen.run_ids, measure)
        run_spread = group_spread(spread, [run["run_id"]], measure)
        sd, df = log_ratio_spread(solo_spread, run_spread, len(chosen.run_ids))
        row["slowdown_lo"], row["slowdown_hi"] = log_bounds(float(row["slowdown"]), sd, df)
        row["interval_df"] = df if df else np.nan
        row["interval_note"] = "" if df else NO_REPEATS
        if "energy_j" in solo:
            row["energy_per_unit_j"] = energy / work if work else np.nan
            row["solo_energy_per_unit_j"] = float((solo["energy_j"] / solo_work).mean())
            ratio = row["energy_per_unit_j"] / row["solo_energy_per_unit_j"]
            row["energy_per_unit_change_pct"] = 100.0 * (ratio - 1.0)
            # the per-unit energy's own spread over each configuration's repeats
            solo_ids = group_members(spread, chosen.run_ids)
            run_ids = group_members(spread, [run["run_id"]])
            e_sd, e_df = log_ratio_spread(
                (len(solo_ids), coefficient_of_variation(_per_unit(stats, solo_ids, column))),
                (len(run_ids), coefficient_of_variation(_per_unit(stats, run_ids, column))),
                len(chosen.run_ids))
            lo, hi = log_bounds(float(ratio), e_sd, e_df)
            row["energy_per_unit_change_pct_lo"] = 100.0 * (lo - 1.0)
            row["energy_per_unit_change_pct_hi"] = 100.0 * (hi - 1.0)
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
