"""Run-to-run variability of repeated runs of one configuration, per GPU model.

Runs are repeats when File + params (:mod:`radtrack.analysis.configs`), collocation and
the number of rows in their workload agree; each group is split by GPU model (tag
``radtrack.gpu.names``) because different GPUs are different experiments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from radtrack.analysis.configs import with_config, without_parents
from radtrack.analysis.summary import coefficient_of_variation

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
