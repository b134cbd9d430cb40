"""Long series on a common time grid per run: the mean per step, the last value for counters."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

#: keys of cumulative readings, resampled by their last value in a step
COUNTER_PATTERN = re.compile(r"(?:^|/)energy_j$")


def is_counter(metric: str) -> bool:
    """Whether ``metric`` is a cumulative reading (resampled by its last value)."""
    return bool(COUNTER_PATTERN.search(metric))


def resample(series: pd.DataFrame, every: float) -> pd.DataFrame:
    """Long series (run_id, metric, seconds, value) -> wide: run_id, seconds, one column per
    metric; mean per step for rates and levels, last value for counters."""
    if every <= 0:
        raise ValueError(f"resampling step must be positive, got {every} s")
    if series.empty:
        return pd.DataFrame(columns=["run_id", "seconds"])
    binned = series.assign(bin=np.floor(series["seconds"].to_numpy(float) / every).astype("int64"))
    counters = binned["metric"].map(is_counter)
    parts = []
    if (~counters).any():
        parts.append(binned[~counters].pivot_table(index=["run_id", "bin"], columns="metric",
                                                   values="value", aggfunc="mean"))
    if counters.any():
        # last value in time order (load_series sorts by time within a run and metric)
        ordered = binned[counters].sort_values(["run_id", "metric", "seconds", "step"], kind="stable")
        parts.append(ordered.pivot_table(index=["run_id", "bin"], columns="metric",
                                         values="value", aggfunc="last"))
    wide = pd.concat(parts, axis=1) if len(parts) > 1 else parts[0]
    wide = wide[sorted(wide.columns)]
    wide.columns.name = None
    # every step between a run's first and last sample gets a row
    grids = []
    for run_id, bins in wide.reset_index()[["run_id", "bin"]].groupby("run_id", sort=True)["bin"]:
        grids.append(pd.DataFrame({"run_id": run_id, "bin": np.arange(bins.min(), bins.max() + 1)}))
    full = pd.concat(grids, ignore_index=True).set_index(["run_id", "bin"])
    wide = full.join(wide, how="left").reset_index()
    wide.insert(1, "seconds", wide.pop("bin") * every)
    return wide
