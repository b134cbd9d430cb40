"""Each run's energy by part: every device the run measured (a GPU, a Jetson board, a CPU
package, DRAM) and every power rail inside one (tegrastats' rails; RAPL's core, uncore and
psys), over the run's span, from the figures the launcher stored (``summary/<counter key>``
and ``summary/<rail>/energy_j``, radtrack/vocab/energy_sources.py), named by what the
listener declares (radtrack/vocab/meaning.py). A device's part is in the run's ``energy_j``
(its attributed share when co-located); a rail's never is: it lies inside its device's.
The report shows the table where a run has more than one part."""

from __future__ import annotations

import math

import pandas as pd

from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe

COLUMNS = ["run_id", "run_name", "part", "scope", "energy_j", "in_energy_j"]
_METRIC = "metric."


def _value(run: pd.Series, key: str) -> float:
    value = pd.to_numeric(run.get(_METRIC + key), errors="coerce")
    return float(value) if value is not None and not pd.isna(value) else math.nan


def run_parts(run: pd.Series) -> list[dict[str, object]]:
    """One run's parts: its devices' stored counter energies, then its rails'."""
    keys = [str(c)[len(_METRIC):] for c in run.index if str(c).startswith(_METRIC)
            and not str(c).startswith(_METRIC + schema.SUMMARY_PREFIX)
            and schema.split_node(str(c)[len(_METRIC):])[0] is None]  # node K's: the node table
    out: list[dict[str, object]] = []
    for _, src in sorted(es.energy_sources(keys).items()):
        key = f"{schema.SUMMARY_PREFIX}{src.key}"
        if src.kind != "counter" or not math.isfinite(energy := _value(run, key) * src.scale):
            continue  # integrated power: in energy_j, no stored figure of its own
        out.append({"part": describe(key).name, "scope": src.scope, "energy_j": energy,
                    "in_energy_j": "yes"})
    for rail in sorted(es.rail_sources(keys)):
        key = schema.rail_energy_key(rail)
        if math.isfinite(energy := _value(run, key)):
            out.append({"part": describe(key).name, "scope": describe(key).scope, "energy_j": energy,
                        "in_energy_j": "no: inside its device"})
    return out


def energy_parts(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run's parts (:data:`COLUMNS`); empty unless some run has more than one."""
    rows = []
    for _, run in runs.iterrows():
        parts = run_parts(run)
        rows += [{"run_id": run.get("run_id"), "run_name": run.get("run_name"), **p} for p in parts]
    table = pd.DataFrame(rows, columns=COLUMNS)
    if table.empty or table.groupby("run_id").size().max() < 2:
        return pd.DataFrame(columns=COLUMNS)
    return table
