"""Run-to-run variability of repeated runs of one configuration, per GPU model.

Runs are repeats when File + params (:mod:`radtrack.compute.configs`), collocation and
the number of rows in their workload agree; each group is split by GPU model (tag
``radtrack.gpu.names``) because different GPUs are different experiments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.compute.configs import with_config, without_parents
from radtrack.compute.summary import coefficient_of_variation

GROUP_COLUMNS = ["file", "params", "collocation", "rows_in_workload", "gpu"]


def time_to_target(series: pd.DataFrame, metric: str, target: float,
                   mode: str = "max") -> pd.DataFrame:
    """Per run, the first logged point where ``metric`` reaches ``target``.

    ``mode='max'``: value >= target (accuracy), ``'min'``: value <= target (loss). Columns
    run_id, seconds, step; NaN for a run that never gets there.
    """
    if mode not in ("max", "min"):
        raise ValueError(f"time_to_target: mode must be 'max' or 'min', not {mode!r}")
    rows = []
    one_metric = series[series["metric"] == metric]
    for run_id in series["run_id"].unique():
        points = one_metric[one_metric["run_id"] == run_id].sort_values(["seconds", "step"])
        hit = points[points["value"] >= target] if mode == "max" else points[points["value"] <= target]
        if hit.empty:
            rows.append({"run_id": run_id, "seconds": np.nan, "step": np.nan})
        else:
            rows.append({"run_id": run_id, "seconds": float(hit["seconds"].iloc[0]),
                         "step": float(hit["step"].iloc[0])})
    return pd.DataFrame(rows, columns=["run_id", "seconds", "step"])


def variability(runs: pd.DataFrame, summary: pd.DataFrame,
                targets: pd.DataFrame | None = None, min_runs: int = 2) -> pd.DataFrame:
    """One row per repeated configuration: n, mean and CV of duration, throughput, energy
    and (with ``targets`` from :func:`time_to_target`) time to target.

    Only FINISHED runs count: a failed or killed run's duration says nothing about the
    configuration. Groups with fewer than ``min_runs`` runs are left out.
    """
    runs = without_parents(runs)
    configured = with_config(runs)
    configured = configured[configured["status"] == "FINISHED"]
    measures = summary.set_index("run_id")
    value_cols = ["duration_s", "energy_j"] + sorted(
        c for c in summary.columns if c.startswith("throughput_") and c.endswith("_mean"))
    table = measures[[c for c in value_cols if c in measures]].copy()
    if targets is not None:
        table["time_to_target_s"] = targets.set_index("run_id")["seconds"]
    out_rows = []
    if configured.empty:
        return pd.DataFrame(columns=[*GROUP_COLUMNS, "n", "run_ids"])
    for key, group in configured.groupby(GROUP_COLUMNS, sort=True, dropna=False):
        if len(group) < min_runs:
            continue
        values = table.reindex(group["run_id"])
        row: dict[str, object] = dict(zip(GROUP_COLUMNS, key, strict=True))
        row["n"] = len(group)
        row["run_ids"] = ",".join(group["run_id"])
        for col in values.columns:
            name = col.removesuffix("_mean")
            row[f"{name}_mean"] = float(values[col].mean())
            row[f"{name}_cv"] = coefficient_of_variation(values[col])
        out_rows.append(row)
    if not out_rows:
        return pd.DataFrame(columns=[*GROUP_COLUMNS, "n", "run_ids"])
    return pd.DataFrame(out_rows)


def group_members(var: pd.DataFrame | None, run_ids: list[str]) -> list[str]:
    """The run ids of the :func:`variability` group that holds every run of ``run_ids``
    (the repeats of their configuration); [] when none does."""
    if var is None or var.empty or not run_ids:
        return []
    wanted = set(run_ids)
    for ids in var["run_ids"]:
        members = str(ids).split(",")
        if wanted <= set(members):
            return members
    return []


def group_spread(var: pd.DataFrame | None, run_ids: list[str], measure: str) -> tuple[int, float]:
    """(n, CV) of ``measure`` (``duration_s``, ``throughput_samples_per_s``, ...) in the
    :func:`variability` group that holds every run of ``run_ids``; (0, NaN) when none does
    (no repeats of that configuration)."""
    column = f"{measure}_cv"
    if var is None or var.empty or column not in var or not run_ids:
        return 0, float("nan")
    wanted = set(run_ids)
    for row in var.to_dict("records"):
        if wanted <= set(str(row.get("run_ids", "")).split(",")):
            return int(row["n"]), float(row[column])
    return 0, float("nan")


def t_quantile(df: int) -> float:
    """The two-sided 95 % Student t quantile on ``df`` degrees of freedom."""
    from scipy.stats import t as student

    return float(student.ppf(0.975, df))


def log_ratio_spread(solo: tuple[int, float], run: tuple[int, float],
                     solo_count: int) -> tuple[float, int]:
    """(standard deviation of log(ratio), degrees of freedom) of a ratio of the mean of
    ``solo_count`` solo runs to one co-located run, from the run-to-run spread (n, CV) of the
    solo configuration and of the co-located one (:func:`group_spread`): the delta method,
    var(log x) ~ CV^2, the solo mean's CV shrunk by its count. Where only one of them was
    repeated its CV stands for both; where neither was, (NaN, 0): the runs give no spread."""
    (n_solo, cv_solo), (n_run, cv_run) = solo, run
    known = [(n, cv) for n, cv in (solo, run) if n >= 2 and np.isfinite(cv)]
    if not known:
        return float("nan"), 0
    if not (n_solo >= 2 and np.isfinite(cv_solo)):
        cv_solo = known[0][1]
    if not (n_run >= 2 and np.isfinite(cv_run)):
        cv_run = known[0][1]
    sd = float(np.sqrt(cv_solo ** 2 / max(solo_count, 1) + cv_run ** 2))
    return sd, sum(n - 1 for n, _ in known)


def log_bounds(value: float, sd: float, df: int) -> tuple[float, float]:
    """The 95 % interval of a positive ratio ``value`` whose log has standard deviation
    ``sd`` on ``df`` degrees of freedom; (NaN, NaN) where either is unknown."""
    if not (np.isfinite(value) and value > 0 and np.isfinite(sd) and df >= 1):
        return float("nan"), float("nan")
    half = t_quantile(df) * sd
    return float(value * np.exp(-half)), float(value * np.exp(half))


def log_sd_of(lo: float, hi: float, df: int) -> float:
    """The log standard deviation a :func:`log_bounds` interval (lo, hi) was made with."""
    if not (np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi >= lo and df >= 1):
        return float("nan")
    return float(np.log(hi / lo) / (2.0 * t_quantile(df)))


def ratio_interval(ratio: float, solo: tuple[int, float], run: tuple[int, float],
                   solo_count: int) -> tuple[float, float]:
    """The 95 % interval of ``ratio`` = (mean of ``solo_count`` solo runs) / (one co-located
    run): :func:`log_ratio_spread`, a t quantile on the repeats' degrees of freedom, on the
    log of the ratio (a ratio's error is multiplicative; its interval stays positive)."""
    sd, df = log_ratio_spread(solo, run, solo_count)
    return log_bounds(ratio, sd, df)
