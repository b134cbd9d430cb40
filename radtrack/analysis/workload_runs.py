"""The one store read of the end of a workload: its runs and the solo baselines of its scripts.

STP, ANTT and energy vs serial (radtrack/compute/colocation.py) compare a co-located
workload's rows with solo runs of the same scripts from earlier workloads (of its own
experiment, else of any other: radtrack/compute/baselines.py, the report's rule), using
the throughput the scripts logged themselves: both are only in the store. The experiment loop
(radtrack/run/experiment.py) reads them here and hands them to radtrack/postrun/accounting.py,
which computes and records the totals without reading the store itself.

Into SQLite or an ``mlflow server`` the reads go through the launcher's light client
(radtrack/analysis/reader_client.py): the end of a co-located workload imports no MLflow
(about 2 CPU-s on a 2-core VM); other stores are read with MLflow's client, as before.
"""

from __future__ import annotations

import contextlib

import pandas as pd

from radtrack.analysis.baseline_runs import with_candidates
from radtrack.analysis.data import load_runs
from radtrack.analysis.reader_client import reading_through
from radtrack.analysis.run_summaries import summarize_runs
from radtrack.compute.colocation import WorkloadRuns
from radtrack.compute.configs import with_config
from radtrack.vocab.schema import ROLE, ROLE_WORKLOAD


def read_workload_runs(experiment: str, workload: int | str, tracking_uri: str) -> WorkloadRuns | None:
    """The workload's parent and rows and every other run of its scripts in ``experiment``
    (solo and co-located: baselines and repeats; for a script without a solo run there, the
    solo runs of other experiments), with the summaries of those runs; None for a workload
    of fewer than two rows."""
    from radtrack.store.handle import light_client

    light = light_client(tracking_uri)
    with contextlib.ExitStack() as stack:
        if light is not None:
            stack.enter_context(reading_through(light))
            if hasattr(light, "close"):  # a SQLite client's connection, once read
                stack.callback(light.close)
        return _read(experiment, workload, tracking_uri)


def _read(experiment: str, workload: int | str, tracking_uri: str) -> WorkloadRuns | None:
    everything = load_runs(experiment, tracking_uri=tracking_uri, include_parents=True)
    parent = everything.get(f"tag.{ROLE}") == ROLE_WORKLOAD
    rows = with_config(everything[~parent])
    mine = rows["workload"].astype(str) == str(workload)
    if int(mine.sum()) < 2:
        return None
    # the solo runs of its scripts (baselines) and their other co-located runs (repeats of
    # the workload: the spread the figures' 95 % intervals come from)
    same_scripts = rows["file"].isin(set(rows.loc[mine, "file"]))
    chosen = everything[~parent][(mine | same_scripts).to_numpy()]
    elsewhere = with_candidates(chosen, tracking_uri)
    if len(elsewhere):
        chosen = pd.concat([chosen, elsewhere], ignore_index=True)
    return WorkloadRuns(pd.concat([everything[parent], chosen]),
                        summarize_runs(chosen, tracking_uri, quantiles=False))
