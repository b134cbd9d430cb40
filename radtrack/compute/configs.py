"""What makes two runs "the same configuration": File + the script's params.

The launcher records placement and bookkeeping as params too (architecture.md: devices,
collocation, listeners, interval, command, manual); those describe how a run was observed or
placed, not what it computed, so they are left out of the configuration key.
"""

from __future__ import annotations

import pandas as pd

from radtrack.vocab import schema

# ``command`` repeats script + args and may embed paths that differ between launches;
# ``manual`` only moves when the listeners start, not what the script computes; ``max_time``
# only says how long the run was watched: its per-unit figures (throughput, J/unit) compare
# across limits, and a duration cut by a limit is never compared (interference.py blanks it).
BOOKKEEPING_PARAMS = frozenset({"script", "command", "devices", "collocation", "listeners",
                                "interval", "manual", "max_time"})


def params_text(row: pd.Series) -> str:
    """The script's params of one :func:`load_runs` row as ``k=v`` pairs, sorted."""
    pairs = []
    for col, value in row.items():
        if not str(col).startswith("param."):
            continue
        name = str(col).removeprefix("param.")
        if name in BOOKKEEPING_PARAMS or value is None or (isinstance(value, float) and pd.isna(value)):
            continue
        pairs.append(f"{name}={value}")
    return " ".join(sorted(pairs))


def without_parents(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`load_runs` frame that are not workload (parent) runs."""
    role = f"tag.{schema.ROLE}"
    return runs[runs[role] != schema.ROLE_WORKLOAD] if role in runs else runs


def with_config(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` plus ``params`` (config text), ``rows_in_workload`` and ``gpu`` (model names)."""
    out = runs.copy()
    out["params"] = [params_text(row) for _, row in runs.iterrows()] if len(runs) else []
    keys = [out["experiment_id"].astype(str), out["workload"].astype(str)]
    out["rows_in_workload"] = out.groupby(keys, dropna=False)["run_id"].transform("count")
    # A run without a workload tag (plain mlflow run) is a workload of its own.
    out.loc[out["workload"].isna(), "rows_in_workload"] = 1
    names = f"tag.{schema.GPU_NAMES}"
    gpu = out[names] if names in out else pd.Series(index=out.index, dtype=object)
    out["gpu"] = gpu.fillna("no GPU")
    out["file"] = out["file"].fillna("-")
    return out
