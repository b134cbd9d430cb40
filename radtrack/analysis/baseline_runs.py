"""The solo runs of other experiments that a co-located run may be measured against, read
from the store (the rule is radtrack/compute/baselines.py's)."""

from __future__ import annotations

import pandas as pd

from radtrack.analysis.data import client_for, find_experiment
from radtrack.analysis.run_records import records, records_frame, run_row
from radtrack.compute.baselines import solo_pool, unmatched_files
from radtrack.compute.configs import with_config
from radtrack.vocab import schema


def load_candidates(files: list[str], tracking_uri: str, exclude: set[str],
                    experiment: str | None = None) -> pd.DataFrame:
    """The FINISHED runs of ``files`` (their ``script`` param) in every experiment of the
    store, or only in ``experiment``, except the runs in ``exclude``: a :func:`load_runs`
    frame (workload parents left out), for :func:`solo_pool` after :func:`with_config`."""
    files = sorted({f for f in files if isinstance(f, str) and f and f != "-"})
    if not files:
        return pd.DataFrame()
    client = client_for(tracking_uri)
    if experiment is not None:
        found = find_experiment(client, experiment)
        names = {found.experiment_id: found.name}
    else:
        names = {e.experiment_id: e.name for e in client.search_experiments()}
    if not names:
        return pd.DataFrame()
    rows = []
    for file in files:
        query = "attributes.status = 'FINISHED'"
        if "'" not in file:  # a quote cannot be escaped in MLflow's filter: filtered below
            query += f" and params.script = '{file}'"
        token = None
        while True:
            page = client.search_runs(list(names), filter_string=query, max_results=1000,
                                      page_token=token)
            rows += [run_row(r, names[r.info.experiment_id]) for r in page
                     if r.data.params.get("script") == file and r.info.run_id not in exclude
                     and r.data.tags.get(schema.ROLE) not in (schema.ROLE_WORKLOAD, schema.ROLE_SCRIPT)]
            token = page.token
            if not token:
                break
    return records_frame(records(list({r["run_id"]: r for r in rows}.values())))




def with_candidates(runs: pd.DataFrame, tracking_uri: str, explicit: str | None = None,
                    files: list[str] | None = None) -> pd.DataFrame:
    """The solo runs of other experiments (or of ``explicit``) that the co-located rows of
    ``runs`` (a :func:`load_runs` frame) may be measured against: the runs of
    :func:`load_candidates` that are solo, not already in ``runs``."""
    configured = with_config(runs) if len(runs) else runs
    wanted = files if files is not None else unmatched_files(configured, explicit)
    if not wanted:
        return pd.DataFrame()
    found = load_candidates(wanted, tracking_uri, set(runs["run_id"]), explicit)
    if found.empty:
        return found
    solo = set(solo_pool(with_config(found))["run_id"])
    return found[found["run_id"].isin(solo)].reset_index(drop=True)
