"""``radtrack report``: per-run summary, interference and variability tables of an experiment,
or the correlation matrix of one run's metrics.

    radtrack report EXPERIMENT [--workload N] [--user NAME] [--target METRIC=VALUE] [--baseline EXP]
                    [--wide] [--format F] [--out FILE]
    radtrack report --correlate RUN_ID [--metrics a,b,c] [--bin S] [--method M]

Also runs as ``python -m radtrack.analysis.report ...``. Exit code 2 with one line on
stderr for an unknown experiment, run id or metric.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from radtrack.analysis.baseline_runs import with_candidates
from radtrack.analysis.data import list_metrics, load_runs, load_series, resolve_tracking_uri
from radtrack.analysis.energy_columns import energy_error_columns, workload_intervals
from radtrack.analysis.energy_parts import energy_parts
from radtrack.analysis.monitoring_cost import monitoring_table
from radtrack.analysis.node_figures import node_table
from radtrack.analysis.node_summaries import (
    NO_TOTAL_WHY,
    PER_NODE_PREFIXES,
    PER_NODE_WHY,
    node_parts,
    with_node_rows,
    with_totals,
)
from radtrack.analysis.report_files import emit_tables
from radtrack.analysis.report_own import own_metrics_table, windows_table
from radtrack.analysis.report_text import REPORT_TABLES, ExperimentReport, render_report
from radtrack.analysis.run_summaries import summarize_runs
from radtrack.analysis.script_runs import is_script_run, load_script_runs, own_metric_columns
from radtrack.analysis.sharing import colocation_text
from radtrack.compute.colocation import workload_table
from radtrack.compute.correlation import correlate
from radtrack.compute.gpulabel import physical_gpus_of_row
from radtrack.compute.interference import interference
from radtrack.compute.result_checks import (
    blank_reasons,
    codes_by_run,
    flags_frame,
    interference_checks,
    run_checks,
)
from radtrack.compute.variability import time_to_target, variability
from radtrack.errors import RadtrackError
from radtrack.reader_args import REPORT_FORMATS, report_parser
from radtrack.vocab import schema

FORMATS = REPORT_FORMATS
TABLES = REPORT_TABLES


def analyze_experiment(experiment: str, workload: int | None = None,
                       tracking_uri: str | None = None, target: tuple[str, float] | None = None,
                       target_mode: str = "max", user: str | None = None,
                       baseline: str | None = None) -> ExperimentReport:
    """Summaries of every run of ``experiment`` (or one workload of it), its co-location
    interference, its run-to-run variability and the checks on its results.

    Solo baselines and repeats come from the whole experiment even when ``workload`` is
    given (and, for a script without a solo run there, from every other experiment; all
    from ``baseline`` when given: radtrack/compute/baselines.py); only the rows shown are
    restricted to that workload (and to ``user``'s launches: MLflow's ``mlflow.user`` tag).
    """
    uri = resolve_tracking_uri(tracking_uri)
    everything = load_runs(experiment, tracking_uri=uri, include_parents=True)
    is_parent = everything.get(f"tag.{schema.ROLE}", pd.Series(dtype=object)) == schema.ROLE_WORKLOAD
    is_parent = is_parent.reindex(everything.index, fill_value=False) | is_script_run(everything)
    runs = everything[~is_parent].reset_index(drop=True)
    if workload is not None and not (runs["workload"] == workload).any():
        known = ", ".join(str(w) for w in sorted(runs["workload"].dropna().unique()))
        raise RadtrackError(f"experiment {experiment!r} has no workload {workload} "
                            f"(workloads: {known or 'none'})")
    summary = summarize_runs(runs, tracking_uri=uri)
    # a multi-node run: a row per node from its own series, the run's row its totals
    parts = node_parts(runs, summary, node_loader(uri))
    summary = with_totals(summary, parts, runs)
    targets = None
    if target is not None and len(runs):
        metric, value = target
        series = load_series(list(runs["run_id"]), metrics=[metric], tracking_uri=uri)
        targets = time_to_target(series, metric, value, target_mode)
        summary = summary.merge(targets.rename(columns={"seconds": "time_to_target_s",
                                                        "step": "time_to_target_step"}),
                                on="run_id", how="left")
    table = runs[["run_id", "experiment", "start_time"]].merge(summary, on="run_id")
    if "samples" in table:  # a count: printed and written as a whole number
        table["samples"] = pd.to_numeric(table["samples"], errors="coerce").round().astype("Int64")
    energy_cols = with_totals(energy_error_columns(runs), parts, runs)
    table = table.merge(energy_cols, on="run_id", how="left")
    # next to the run: the physical GPU(s), as every run names its own GPUs gpu0..
    gpu_used = {row["run_id"]: physical_gpus_of_row(row) for row in runs.to_dict("records")}
    table.insert(table.columns.get_loc("run_name") + 1 if "run_name" in table.columns else 1,
                 "gpu_used", table["run_id"].map(gpu_used).fillna("").replace("", "-"))
    users = everything.get(f"tag.{schema.MLFLOW_USER}", pd.Series("", index=everything.index))
    table.insert(table.columns.get_loc("gpu_used"), "user",
                 table["run_id"].map(dict(zip(everything["run_id"], users.fillna(""), strict=True))).fillna(""))
    # which launch (radtrack.launch_id): rows of two launches of one workload stay apart
    launches = everything.get(f"tag.{schema.LAUNCH_ID}", pd.Series("", index=everything.index))
    table.insert(table.columns.get_loc("user") + 1, "launch", table["run_id"].map(
        dict(zip(everything["run_id"], launches.fillna(""), strict=True))).fillna(""))
    # what each run shared, in the page's words (analysis/sharing.py): the sheet's cell alone
    # says '-' for a solo run and a time-shared one alike
    sharing = {row["run_id"]: colocation_text(row) or "-" for row in runs.to_dict("records")}
    table.insert(table.columns.get_loc("collocation") + 1 if "collocation" in table.columns else 1,
                 "sharing", table["run_id"].map(sharing).fillna("-"))
    # solo runs of other experiments (or of --baseline EXP) and their summaries
    foreign = with_candidates(runs, uri, baseline)
    pooled, pooled_summary = runs, summary
    if len(foreign):
        pooled = pd.concat([runs, foreign], ignore_index=True)
        pooled_summary = pd.concat([summary, summarize_runs(foreign, tracking_uri=uri, quantiles=False)],
                                   ignore_index=True)
    inter = interference(pooled, pooled_summary, baseline=baseline, elsewhere=True,
                         spread=variability(pooled, pooled_summary))
    if "run_id" in inter:
        inter = inter.merge(energy_cols[["run_id", "energy_j_ci95_pct"]], on="run_id", how="left")
        inter.insert(inter.columns.get_loc("collocation") + 1 if "collocation" in inter.columns else 1,
                     "sharing", inter["run_id"].map(sharing).fillna("-"))
    workloads = workload_table(everything, inter)
    if not workloads.empty:
        workloads.insert(workloads.columns.get_loc("energy_j") + 1, "energy_j_ci95_pct",
                         workload_intervals(workloads, everything, energy_cols))
    var = variability(runs, summary, targets)
    records = {r["run_id"]: r for r in pooled.to_dict("records")}
    flags = run_checks([records[r] for r in runs["run_id"]], summary, extra=energy_cols) + \
        interference_checks(inter, records, pooled_summary)
    checks = flags_frame(flags)
    codes, slowdown_codes = codes_by_run(flags), codes_by_run(flags, ["slowdown"])
    table["checks"] = table["run_id"].map(lambda r: codes.get(r, ""))
    if "run_id" in inter:
        inter["checks"] = inter["run_id"].map(lambda r: slowdown_codes.get(r, ""))
    blanks = {r: blank_reasons(records[r], row) for r, row in
              zip(table["run_id"], table.to_dict("records"), strict=True) if r in records}
    if workload is not None:
        table = table[table["workload"] == workload]
        inter = inter[inter["workload"] == workload]
        workloads = workloads[workloads["workload"] == workload]
        in_workload = set(table["run_id"])
        var = var[var["run_ids"].map(lambda ids: bool(in_workload & set(ids.split(","))))
                  .astype(bool)]
        checks = checks[checks["run_id"].isin(in_workload)]
    if user is not None:
        theirs = set(everything.loc[users == user, "run_id"])
        if not theirs:
            known = ", ".join(sorted({u for u in users.dropna() if u})) or "none recorded"
            raise RadtrackError(f"experiment {experiment!r} has no runs launched by {user!r} "
                                f"(users: {known})")
        table = table[table["run_id"].isin(theirs)]
        inter = inter[inter["run_id"].isin(theirs)] if "run_id" in inter else inter
        in_user = set(table["workload"])
        workloads = workloads[workloads["workload"].isin(in_user)
                              & workloads["launch"].isin(set(table["launch"]))] \
            if len(workloads) else workloads
        var = var[var["run_ids"].map(lambda ids: bool(theirs & set(ids.split(",")))).astype(bool)] \
            if len(var) else var
        checks = checks[checks["run_id"].isin(theirs)]
    # grouped by launch within a workload, launches in the order they started
    first = table.groupby(["workload", "launch"])["start_time"].transform("min")
    table = table.assign(_launched=first).sort_values(
        ["workload", "_launched", "launch", "letter", "start_time"], kind="stable") \
        .drop(columns="_launched")
    inter = inter.sort_values(["workload", "letter"], kind="stable")
    for run_id in set(parts.get("run_id", ())) & set(table["run_id"]):  # a multi-node run's own row
        row = table[table["run_id"] == run_id].iloc[0]
        blanks.setdefault(run_id, {}).update(
            {c: PER_NODE_WHY if str(c).startswith(PER_NODE_PREFIXES) else NO_TOTAL_WHY
             for c in table.columns if pd.isna(row[c]) and (str(c).startswith(PER_NODE_PREFIXES)
                                                             or c in ("energy_j", "gpu_energy_j"))})
    table = with_node_rows(table.reset_index(drop=True), parts)
    if "samples" in table:  # a count, node rows' included
        table["samples"] = pd.to_numeric(table["samples"], errors="coerce").round().astype("Int64")
    shown = everything[is_parent & ~is_script_run(everything)]
    if workload is not None:
        shown = shown[shown["workload"] == workload]
    if user is not None:
        shown = shown[shown["run_id"].isin(theirs)]
    rows = runs[runs["run_id"].isin(table["run_id"])]
    found = load_script_runs(rows, tracking_uri=uri)
    found_summary = summarize_runs(found, tracking_uri=uri, quantiles=False) if len(found) else pd.DataFrame()
    return ExperimentReport(str(experiment), table.reset_index(drop=True),
                            inter.reset_index(drop=True), var.reset_index(drop=True),
                            workloads.reset_index(drop=True),
                            footprint_line(shown, _parent_intervals(shown, everything, energy_cols)),
                            scripts=script_table(found, found_summary),
                            own_metrics=own_metrics_table(rows, summary),
                            windows=pd.concat([windows_table(rows, summary, node_loader(uri)),
                                               windows_table(found, found_summary, node_loader(uri))],
                                              ignore_index=True).infer_objects()
                            .pipe(_in_order, table),
                            monitoring=monitoring_table(rows), nodes=node_table(rows),
                            energy_parts=energy_parts(rows),
                            checks=checks.reset_index(drop=True),
                            blanks={r: b for r, b in blanks.items() if r in set(table["run_id"])})


def _in_order(frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows in the order of ``table``'s runs (then their own order)."""
    order = {run_id: i for i, run_id in enumerate(dict.fromkeys(table["run_id"]))}
    rank = frame["run_id"].map(order).fillna(len(order)) if "run_id" in frame else None
    return frame if rank is None else frame.iloc[rank.argsort(kind="stable")].reset_index(drop=True)


def node_loader(uri: str):
    """Series of a run for :func:`node_parts`: the keys it has (a node's listener may have
    read fewer than another's)."""
    def load(run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        try:
            return load_series(run_ids, metrics=keys, tracking_uri=uri)
        except RadtrackError:  # a key none of the runs has: read those they have
            known = set(list_metrics(run_ids, tracking_uri=uri))
            kept = [k for k in keys if k in known]
            return load_series(run_ids, metrics=kept, tracking_uri=uri) if kept else pd.DataFrame()

    return load


def script_table(found: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The runs the rows' scripts made (``found``: load_script_runs): the row, the script's
    own final metrics, and the summaries of the run's span (``summary``: energy, power, ...)
    as in the per-run table."""
    if found.empty:  # its fixed columns: a file's schema does not depend on the data
        return pd.DataFrame(columns=["run_id", "row_run_name", "script_experiment", "status"])
    own = own_metric_columns(found)
    table = found[["run_id", "row_run_name", "experiment", "status", *own]].rename(
        columns={c: c.removeprefix("metric.") for c in own})
    table = table.rename(columns={"experiment": "script_experiment"})
    keep = [c for c in summary.columns if c not in table.columns or c == "run_id"]
    return table.merge(summary[keep], on="run_id", how="left")


def _parent_intervals(parents: pd.DataFrame, everything: pd.DataFrame,
                      energy_cols: pd.DataFrame) -> pd.Series:
    """Each workload parent's energy interval (%): the widest of its rows' GPU intervals."""
    if parents.empty:
        return pd.Series(dtype=float)
    launch = parents.get(f"tag.{schema.LAUNCH_ID}", pd.Series("", index=parents.index)).fillna("")
    frame = pd.DataFrame({"experiment": parents["experiment"], "workload": parents["workload"],
                          "launch": launch}, index=parents.index)
    return workload_intervals(frame, everything, energy_cols)


def _energy_kind(parents: pd.DataFrame) -> str:
    """What the workloads' measured energy is of, from their parts (``gpu<i>``: a GPU; any
    other, ``pkg0``, ``pkg0/dram``: the host's CPU side): "GPU", "CPU-side" or both."""
    head, tail = f"metric.{schema.workload_key('@', 'energy_j')}".split("@")
    # summary/workload/energy_j (the parts' total) matches head and tail too: not a part
    parts = {c[len(head):-len(tail)] for c in parents.columns if c.startswith(head)
             and c.endswith(tail) and len(c) > len(head) + len(tail) and parents[c].notna().any()}
    gpu, cpu = any(p.startswith("gpu") for p in parts), any(not p.startswith("gpu") for p in parts)
    return "GPU and CPU-side" if gpu and cpu else "CPU-side" if cpu else "GPU"


def footprint_line(parents: pd.DataFrame, intervals: pd.Series | None = None) -> str:
    """The measured energy of the workloads (idle and other included; named by what it is of:
    their GPUs, their host's CPU side, or both), with its 95 %
    interval where every workload has one (independent errors), and its CO2e."""
    from radtrack.compute.carbon import from_tags
    from radtrack.compute.energy_error import combine

    def column(key: str) -> pd.Series:
        name = f"metric.{schema.workload_key(key)}"
        return pd.to_numeric(parents[name], errors="coerce") if name in parents else pd.Series(dtype=float)

    energy = column("energy_j").dropna()
    if energy.empty:
        return ""
    line = (f"Measured {_energy_kind(parents)} energy of {len(energy)} workload(s): "
            f"{energy.sum() / 3.6e6:.4g} kWh")
    if intervals is not None and len(intervals):
        ci = combine([(float(energy[i]), float(intervals.get(i, float("nan")))) for i in energy.index])
        if ci == ci:
            line += f" ±{ci:.1f} % (95 %)"
    co2 = column("co2e_g").dropna()
    if co2.empty:
        return line + " (no carbon intensity recorded: --carbon-intensity or $RADTRACK_CARBON_INTENSITY)"
    figures = sorted({f"{c.intensity_g_per_kwh:g} g/kWh x PUE {c.pue:g} ({c.source})"
                      for _, p in parents.loc[co2.index].iterrows() if (c := from_tags(p))})
    return f"{line}; footprint {co2.sum():.4g} g CO2e at {', '.join(figures)}"


# CLI ------------------------------------------------------------------------------------

build_parser = report_parser  # the arguments live in radtrack/reader_args.py (light to import)


def _correlate(args: argparse.Namespace, uri: str) -> None:
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    series = load_series(args.correlate, metrics=metrics, tracking_uri=uri)
    if series.empty:
        raise RadtrackError(f"run {', '.join(args.correlate)} has no metrics to correlate")
    matrix = correlate(series, metrics, bin_s=args.bin, method=args.method)
    title = (f"{args.method} correlation, {args.bin:g} s bins, "
             f"run {', '.join(args.correlate)}")
    text = f"{title}\n{matrix.round(3).to_string()}"
    emit_tables({"correlation": matrix.reset_index(names="metric")}, "correlation", text, args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The output is the report only: MLflow would draw a "Downloading artifacts" bar on
    # stderr for every trace it fetches whenever tqdm is installed.
    from radtrack.store.mlflow_client import quiet_downloads

    quiet_downloads(force=True)
    uri = resolve_tracking_uri(args.tracking_uri)
    try:
        if args.correlate:
            if args.experiment is not None:
                raise RadtrackError("give either an experiment or --correlate RUN_ID, not both")
            _correlate(args, uri)
            return 0
        if args.experiment is None:
            raise RadtrackError("name an experiment (radtrack report EXPERIMENT) "
                                "or a run (radtrack report --correlate RUN_ID)")
        if args.study:
            from radtrack.analysis.studies.render import emit_study

            emit_study(args, uri, emit_tables)
            return 0
        report = analyze_experiment(args.experiment, args.workload, uri, args.target,
                                    args.target_mode, user=args.user, baseline=args.baseline)
        emit_tables(report.tables(), "runs", render_report(report, wide=args.wide), args)
        return 0
    except RadtrackError as exc:
        print(f"radtrack report: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
