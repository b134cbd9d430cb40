"""Which solo runs a co-located run is measured against (docs/analysis.md, "How baselines
are found").

A solo run is a FINISHED run alone in its workload (a radtrack row without a
``radtrack.colocated_with`` tag; a run recorded without radtrack's tags: one row in its
workload). The rule, for a co-located run of File F with params P on host H:

1. ``--baseline EXP`` given: the solo runs of F in experiment EXP; those with params P on
   host H when there are any, else those with params P, else every solo run of F there,
   the difference then said in ``mismatch`` (a result check flags it);
2. otherwise the solo runs of F with params P on host H in the run's own experiment;
3. else those in every other experiment of the store (``solo.csv`` records into ``solo``,
   ``timeshare.csv`` into ``timeshare``: the example sheets rely on this).

Repeats are averaged by the caller. A run or a solo run without a recorded host (stores
written before ``radtrack.hostname``) matches any host. Pure computation over frames:
radtrack/analysis/baseline_runs.py reads the solo runs of other experiments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from radtrack.vocab import schema

_HOST = f"tag.{schema.HOSTNAME}"
_COLOCATED = f"tag.{schema.COLOCATED_WITH}"


@dataclass(frozen=True)
class Baseline:
    """The solo runs chosen for one co-located run, and how they were found."""

    run_ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    experiments: list[str] = field(default_factory=list)
    how: str = ""  # "same experiment", "other experiment", "--baseline EXP"
    mismatch: str = ""  # what differs from the co-located run ("" when nothing)

    def describe(self) -> str:
        """``solo-1 A (abc12345), solo-2 A (def67890) in 'solo'``."""
        runs = ", ".join(f"{n} ({i[:8]})" for n, i in zip(self.names, self.run_ids, strict=True))
        where = ", ".join(repr(e) for e in dict.fromkeys(self.experiments))
        return f"{runs} in {where}" if runs else ""


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def is_colocated(runs: pd.DataFrame) -> pd.Series:
    """True for the rows of ``runs`` (a :func:`with_config` frame) that shared their
    workload: a radtrack row names its partners (``radtrack.colocated_with``); a run
    recorded without that tag counts its workload's rows (two launches of one solo
    workload number are not co-located with each other)."""
    colocated = runs.get(_COLOCATED, pd.Series("", index=runs.index)).map(_text) != ""
    tagged = runs.get(f"tag.{schema.ROLE}", pd.Series("", index=runs.index)).map(_text) == schema.ROLE_ROW
    return colocated | (~tagged & (runs["rows_in_workload"] > 1))


def solo_pool(runs: pd.DataFrame) -> pd.DataFrame:
    """The FINISHED solo runs of ``runs`` (a :func:`with_config` frame), with ``host``."""
    if runs.empty:
        return runs.assign(host=pd.Series(dtype=object))
    role = runs.get(f"tag.{schema.ROLE}", pd.Series("", index=runs.index)).map(_text)
    alone = (~is_colocated(runs) & (runs["status"] == "FINISHED")
             & ~role.isin([schema.ROLE_WORKLOAD, schema.ROLE_SCRIPT]))
    out = runs[alone]
    return out.assign(host=out.get(_HOST, pd.Series("", index=out.index)).map(_text))


def _same_host(pool: pd.DataFrame, host: str) -> pd.Series:
    return (pool["host"] == host) | (pool["host"] == "") | (host == "")


def _experiment_matches(pool: pd.DataFrame, experiment: str) -> pd.Series:
    return (pool["experiment"].astype(str) == experiment) | (pool["experiment_id"].astype(str) == experiment)


def choose(run: pd.Series, pool: pd.DataFrame, explicit: str | None = None) -> Baseline:
    """The baseline of co-located ``run`` (a :func:`with_config` row) among ``pool``
    (:func:`solo_pool`), by the module's rule."""
    host = _text(run.get(_HOST))
    same_file = pool[pool["file"] == run["file"]]
    if same_file.empty:
        return Baseline()
    same_params = same_file["params"] == run["params"]
    if explicit is not None:
        mine = same_file[_experiment_matches(same_file, explicit)]
        params = mine["params"] == run["params"]
        exact = mine[params & _same_host(mine, host)]
        if not exact.empty:
            return _baseline(exact, f"--baseline {explicit}", "")
        if params.any():
            hosts = ", ".join(sorted(set(mine.loc[params, "host"])))
            return _baseline(mine[params], f"--baseline {explicit}",
                             f"host differs: solo on {hosts}, co-located on {host}")
        if not mine.empty:
            others = "; ".join(sorted(set(mine["params"])))
            return _baseline(mine, f"--baseline {explicit}",
                             f"params differ: solo [{others}], co-located [{run['params']}]")
        return Baseline()
    match = same_file[same_params & _same_host(same_file, host)]
    own = match[match["experiment_id"].astype(str) == str(run["experiment_id"])]
    if not own.empty:
        return _baseline(own, "same experiment", "")
    if not match.empty:
        return _baseline(match, "other experiment", "")
    return Baseline()


def _baseline(rows: pd.DataFrame, how: str, mismatch: str) -> Baseline:
    return Baseline(list(rows["run_id"]), [_text(n) for n in rows["run_name"]],
                    [_text(e) for e in rows["experiment"]], how, mismatch)


def missing_note(run: pd.Series, explicit: str | None, elsewhere: bool = False) -> str:
    """Why ``run`` has no baseline, naming where it was looked for (``elsewhere``: every
    other experiment of the store too)."""
    where = (f"in experiment {explicit!r}" if explicit is not None
             else f"in experiment {run['experiment']!r}" + (" or any other experiment" if elsewhere else ""))
    host = _text(run.get(_HOST))
    on = f" on host {host}" if host else ""
    return f"no solo run of {run['file']} with params [{run['params']}]{on} {where}"


def unmatched_files(runs: pd.DataFrame, explicit: str | None = None) -> list[str]:
    """The Files of the co-located rows of ``runs`` (a :func:`with_config` frame) that have
    no baseline among ``runs`` themselves: those to look for in other experiments
    (every File when ``explicit`` names the experiment to take them from)."""
    if runs.empty:
        return []
    pool = solo_pool(runs)
    colocated = runs[is_colocated(runs)]
    if explicit is not None:
        return sorted(set(colocated["file"]))
    return sorted({run["file"] for _, run in colocated.iterrows() if not choose(run, pool).run_ids})
