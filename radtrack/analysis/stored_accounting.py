"""Co-location accounting of stored runs that were recorded without it.

The launcher accounts each workload when it ends (radtrack/postrun/accounting.py). Runs recorded
before that existed, or whose launcher was killed (their samples reach the store through
``radtrack sync``), have no ``summary/attribution/...`` metrics. For those, the analysis
accounts the workload from its stored traces (those of every listener that declares a
device's power, energy counter, per-process share or utilisation, or a run's or the host's
CPU time) and tags with the same arithmetic
(radtrack/compute/attribution.py), over each run's MLflow start..end, and nothing is
written back: the store stays as recorded.
"""

from __future__ import annotations

import pandas as pd

from radtrack.analysis.data import load_runs, read_telemetry
from radtrack.analysis.trace_listing import telemetry_listeners
from radtrack.compute.attribution import account
from radtrack.compute.cpu_energy_share import mark_host_uses
from radtrack.compute.gpu_uses import run_uses
from radtrack.vocab.energy_sources import declares

#: a listener whose traces accounting reads declares one of these roles (the CPU times split
#: the host's CPU-side energy: radtrack/compute/cpu_energy_share.py)
ROLES = ("device_power", "energy_counter", "proc_share", "utilisation", "proc_cpu", "host_cpu")


def _frames(row: pd.Series, uri: str) -> dict[str, pd.DataFrame]:
    run_id, status = str(row["run_id"]), row.get("status")
    have = set(telemetry_listeners(run_id, tracking_uri=uri, status=status,
                                   artifact_uri=row.get("artifact_uri")))
    return {name: read_telemetry(run_id, name, tracking_uri=uri, status=status,
                                 artifact_uri=row.get("artifact_uri"))
            for name in sorted(have) if declares(name, *ROLES)}


def _span(row: pd.Series) -> tuple[float, float] | None:
    start, end = row.get("start_time"), row.get("end_time")
    if start is None or end is None or pd.isna(start) or pd.isna(end):
        return None
    return pd.Timestamp(start).timestamp(), pd.Timestamp(end).timestamp()


def account_stored(runs: pd.DataFrame, run_ids: list[str], tracking_uri: str
                   ) -> dict[str, tuple[float, str]]:
    """run id -> (attributed joules, method) for ``run_ids`` (rows of ``runs``, a
    :func:`load_runs` frame), accounting each one's whole workload; runs that cannot be
    accounted (no GPU power trace, no GPU UUID tag, still running) are left out."""
    wanted = runs[runs["run_id"].isin(run_ids)]
    out: dict[str, tuple[float, str]] = {}
    for (experiment, workload), _ in wanted.groupby(["experiment", "workload"], dropna=True):
        rows = load_runs(str(experiment), workload=workload, tracking_uri=tracking_uri)
        uses = []
        for _, row in rows.iterrows():
            span = _span(row)
            if span is None or row.get("status") == "RUNNING":
                continue
            tags = {k[4:]: v for k, v in row.items() if isinstance(k, str) and k.startswith("tag.")
                    and isinstance(v, str)}
            frames = _frames(row, tracking_uri)
            found = run_uses(str(row["run_id"]), frames, tags, row.get("collocation"), *span)
            mark_host_uses(found, frames)
            uses += list(found.values())
        if not uses:
            continue
        accounts = account(uses, min(u.start for u in uses), max(u.end for u in uses))
        for run_id in set(wanted["run_id"]) & {u.run for u in uses}:
            parts = [(acc.energy_j(run_id), acc.method) for acc in accounts.values() if run_id in acc.energy]
            out[run_id] = (sum(p[0] for p in parts),
                           ",".join(dict.fromkeys(f"{p[1]} (from traces)" for p in parts)))
    return out
