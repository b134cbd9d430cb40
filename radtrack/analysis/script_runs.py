"""The runs a script made itself, read next to the row runs of its launch (docs/mlflow-code.md).

A row run lists its script's runs in ``radtrack.script_runs``; each script run carries its
own metrics and params and, bound by the launcher, the hardware series and summaries of its
span. Readers show them together: one record per script run with the row it belongs to,
its own final metrics (``loss``, ``accuracy``, ...) and the same per-run summary columns as
a row (energy, power, utilisation of its span).
"""

from __future__ import annotations

import pandas as pd

from radtrack.analysis.data import load_runs
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe

# metric families radtrack writes; a listener's series (any listener that declares it, a
# plugin's too) are radtrack's as well; everything else on a script's run is its own
_RADTRACK_FAMILIES = (schema.SUMMARY_PREFIX, schema.ATTRIBUTION_PREFIX, schema.WINDOW_PREFIX,
                      schema.SYSTEM_PREFIX)


def is_script_run(runs: pd.DataFrame) -> pd.Series:
    """True for the runs a script made (``radtrack.role=script``)."""
    role = runs.get(f"tag.{schema.ROLE}", pd.Series(index=runs.index, dtype=object))
    return role.reindex(runs.index) == schema.ROLE_SCRIPT


def script_run_ids(rows: pd.DataFrame) -> dict[str, str]:
    """Script run id -> its row run id, for the rows of ``rows`` in the same store."""
    col = f"tag.{schema.SCRIPT_RUNS}"
    other = f"tag.{schema.SCRIPT_TRACKING_URI}"
    out: dict[str, str] = {}
    if col not in rows:
        return out
    for _, row in rows.iterrows():
        ids = row.get(col)
        if not isinstance(ids, str) or not ids:
            continue
        elsewhere = row.get(other) if other in rows else None
        if isinstance(elsewhere, str) and elsewhere:
            continue  # in another store: the row's tag names it
        out.update({rid: row["run_id"] for rid in ids.split(",") if rid})
    return out


def own_metric_columns(frame: pd.DataFrame) -> list[str]:
    """``metric.*`` columns the script logged itself (not radtrack's families or series)."""
    return [c for c in frame.columns if c.startswith("metric.")
            and not c.removeprefix("metric.").startswith(_RADTRACK_FAMILIES)
            and not describe(c.removeprefix("metric.")).declared]


def load_script_runs(rows: pd.DataFrame, tracking_uri: str | None = None) -> pd.DataFrame:
    """One record per script run of ``rows`` (a :func:`load_runs` frame of row runs): the
    :func:`load_runs` columns plus ``row_run_id``, ``row_run_name`` and ``script_experiment``."""
    links = script_run_ids(rows)
    if not links:
        return pd.DataFrame()
    found = load_runs(run_ids=list(links), tracking_uri=tracking_uri)
    if found.empty:
        return found
    names = dict(zip(rows["run_id"], rows["run_name"], strict=True))
    found.insert(2, "row_run_id", found["run_id"].map(links))
    found.insert(3, "row_run_name", found["row_run_id"].map(names))
    return found.reset_index(drop=True)
