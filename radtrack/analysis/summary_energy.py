"""A summary's energy is the run's own: attributed energy in ``energy_j``, the GPUs' (and
boards') in ``gpu_energy_j``, the host's CPU side (CPU packages and DRAM: scope ``host``,
radtrack/vocab/energy_sources.py) in ``cpu_energy_j``, and the method in ``attribution``.

The launcher stores each run's attributed energy per GPU scope as
``summary/attribution/<scope>/energy_j`` and the method as the tag
``radtrack.attribution.<scope>`` (radtrack/postrun/accounting.py). A run recorded before
attribution existed keeps the whole GPU when it ran alone; a co-located one gets no
``energy_j`` (NaN, ``attribution`` = ``unattributed``) rather than a figure that would count
its GPU's energy once per run. A run that recorded a carbon intensity also gets ``co2e_g``
(radtrack/postrun/footprint.py) of its attributed energy.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from radtrack.compute.carbon import from_tags
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema

ATTRIBUTED_RE = re.compile(re.escape(f"metric.{schema.SUMMARY_ATTRIBUTION_PREFIX}")
                           + r"(?P<scope>.+)/energy_j")
METHOD_TAG = f"tag.{schema.ATTRIBUTION_TAG_PREFIX}"
UNATTRIBUTED = "unattributed"


def _method(row: pd.Series, scopes: list[str]) -> str:
    methods = [str(row.get(f"{METHOD_TAG}{s}")) for s in scopes
               if isinstance(row.get(f"{METHOD_TAG}{s}"), str)]
    return ",".join(dict.fromkeys(methods)) or "solo"


def _host_energy(row: pd.Series) -> float:
    """The host's CPU-side energy over the run (J): its host-scope energy counters' stored
    summaries (``summary/<counter key>``, e.g. the rapl listener's packages and DRAM); 0 with
    no host source, NaN where one has no stored figure."""
    prefix = f"metric.{schema.SUMMARY_PREFIX}"
    keys = [str(c)[len(prefix):] for c in row.index if str(c).startswith(prefix)
            and str(c).endswith("energy_j")]
    hosts = [s for s in es.energy_sources(keys).values() if s.scope == "host"]
    total = 0.0
    for src in hosts:
        value = pd.to_numeric(row.get(prefix + src.key), errors="coerce")
        if src.kind != "counter" or pd.isna(value):
            return float("nan")
        total += float(value) * src.scale
    return total


def _colocated(row: pd.Series) -> bool:
    others = row.get(f"tag.{schema.COLOCATED_WITH}")
    return isinstance(others, str) and bool(others.strip())


def apply_attribution(runs: pd.DataFrame, table: pd.DataFrame,
                      tracking_uri: str | None = None) -> pd.DataFrame:
    """``table`` (summary rows by ``run_id``, ``energy_j`` measured over the run's GPUs) with
    ``energy_j`` replaced by the attributed energy, ``gpu_energy_j`` and ``attribution``
    added, and every ``energy_per_<unit>_j`` rebased on the attributed energy. ``runs`` is
    the :func:`load_runs` frame the table was made from. With ``tracking_uri``, co-located
    runs recorded without accounting are accounted from their stored traces
    (radtrack/analysis/stored_accounting.py)."""
    if table.empty or "energy_j" not in table.columns:
        return table
    out = table.copy()
    measured = pd.to_numeric(out["energy_j"], errors="coerce")  # every device's, host included
    by_id = runs.set_index("run_id") if "run_id" in runs.columns else pd.DataFrame()
    host = pd.Series([_host_energy(by_id.loc[r]) if r in by_id.index else 0.0 for r in out["run_id"]],
                     index=out.index, dtype=float)
    gpu = measured - host.fillna(0.0)  # the GPUs' and boards' alone
    columns = [c for c in by_id.columns if ATTRIBUTED_RE.fullmatch(str(c))]
    energy, method = [], []
    for run_id, whole in zip(out["run_id"], measured, strict=True):
        row = by_id.loc[run_id] if run_id in by_id.index else pd.Series(dtype=object)
        parts = {ATTRIBUTED_RE.fullmatch(c).group("scope"): row.get(c) for c in columns}  # type: ignore[union-attr]
        parts = {s: float(v) for s, v in parts.items() if v is not None and not pd.isna(v)}
        if parts:
            energy.append(sum(parts.values()))
            method.append(_method(row, sorted(parts)))
        elif _colocated(row):
            energy.append(np.nan)
            method.append(UNATTRIBUTED)
        else:
            energy.append(whole)
            method.append("solo")
    missing = [r for r, m in zip(out["run_id"], method, strict=True) if m == UNATTRIBUTED]
    if missing and tracking_uri is not None:
        from radtrack.analysis.stored_accounting import account_stored
        from radtrack.errors import RadtrackError

        try:
            found = account_stored(runs, missing, tracking_uri)
        except (RadtrackError, OSError, ValueError):
            found = {}  # traces gone or unreadable: the runs stay unattributed
        for i, run_id in enumerate(out["run_id"]):
            if run_id in found:
                energy[i], method[i] = found[run_id]
    out["energy_j"] = energy
    position = list(out.columns).index("energy_j") + 1
    out.insert(position, "gpu_energy_j", gpu)
    if (host != 0).any():  # a run read its host's CPU side: shown apart
        position += 1
        out.insert(position, "cpu_energy_j", host.where(host != 0, np.nan))
    out.insert(position + 1, "attribution", method)
    carbon = [from_tags(by_id.loc[r]) if r in by_id.index else None for r in out["run_id"]]
    if any(c is not None for c in carbon):
        out.insert(position + 2, "co2e_g", [c.co2e_g(e) if c is not None else np.nan
                                             for c, e in zip(carbon, out["energy_j"], strict=True)])
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(measured > 0, out["energy_j"] / measured, np.nan)
    for column in [c for c in out.columns if c.startswith("energy_per_") and c.endswith("_j")]:
        out[column] = pd.to_numeric(out[column], errors="coerce") * scale
    return out
