"""``radtrack export``: one wide, time-aligned table of an experiment's runs.

    radtrack export EXPERIMENT [--workload N] [--every 1s] [--metrics a,b] \
                    [--format parquet|csv] --out FILE
    radtrack export EXPERIMENT [--workload N] --list-metrics

A row per run and time step, a column per metric, the run's identity, params and tags as
columns: what a researcher feeds to pandas, scikit-learn or a notebook. The series are
those of :func:`radtrack.analysis.load_series` (Parquet traces for listener metrics, the
metric history for the script's own), put on a common grid per run:

- step k covers run seconds ``[k * every, (k + 1) * every)``; its row has ``seconds`` =
  ``k * every`` and ``time`` = run start + ``seconds`` (UTC);
- rates and levels (power, utilisation, temperatures, throughput, loss, ...): the mean of
  the samples inside the step;
- counters (cumulative readings: ``.../energy_j``): the last value inside the step, so
  differences between rows are the energy used in between;
- a step without a sample of a metric holds NaN for it (nothing is interpolated); every
  step from the run's first sample to its last has a row;
- a run over several nodes (radtrack/nodes/) has a row per node and step, a ``node``
  column after the run's identity, and each node's series under the plain names
  (``top/cpu_pct``, not ``node1/top/cpu_pct``), ``--metrics`` naming them for every
  node; an export without a multi-node run has no ``node`` column.

What each column is (whose figure, in what unit: ``top/cpu_pct`` is the host's CPU in % of
all cores, ``top/proc/cpu_pct`` the run's in % of one core) travels with it, in the columns
table every reader writes (radtrack/vocab/meaning.py ``column_row``: table, name, scope,
unit, unit_text, role, meaning; the same as ``radtrack report``'s files): a Parquet file
carries it in each column's field metadata (``radtrack.scope``, ``radtrack.unit``,
``radtrack.unit_text``, ``radtrack.role``, ``radtrack.meaning``); a CSV file, which has no
place for it, gets it beside it as ``<name>.columns.csv``, a row per column.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import sys
from pathlib import Path

import pandas as pd

from radtrack.analysis.data import list_metrics, load_runs, load_series, resolve_tracking_uri
from radtrack.analysis.report_files import write_parquet
from radtrack.analysis.script_runs import load_script_runs
from radtrack.compute.resample import is_counter, resample  # noqa: F401 (is_counter: re-export)
from radtrack.csvsafe import safe_frame
from radtrack.errors import RadtrackError
from radtrack.reader_args import EXPORT_FORMATS, export_args, export_parser
from radtrack.vocab import schema
from radtrack.vocab.meaning import COLUMN_FIELDS, column_row

FORMATS = EXPORT_FORMATS
IDENTITY = ["run_id", "run_name", "experiment", "workload", "letter", "status", "file",
            "devices", "collocation"]
_EVERY = re.compile(r"^\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m|min)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, None: 1.0}


def parse_every(text: str) -> float:
    """``1s``, ``500ms``, ``0.5``, ``2m`` -> seconds (> 0); ValueError naming the input."""
    match = _EVERY.match(text)
    seconds = float(match["number"]) * _UNIT_SECONDS[match["unit"]] if match else 0.0
    if seconds <= 0:
        raise ValueError(f"--every wants a positive duration such as 1s, 500ms or 2m, got {text!r}")
    return seconds


def export_table(experiment: str, workload: int | None = None, every: float = 1.0,
                 metrics: list[str] | None = None, tracking_uri: str | None = None) -> pd.DataFrame:
    """The wide table of ``experiment`` (or one workload of it): identity, ``seconds``,
    ``time``, one column per metric, then ``param.*`` and ``tag.*``."""
    uri = resolve_tracking_uri(tracking_uri)
    runs = _export_runs(experiment, workload, uri)
    try:
        series = _load(list(runs["run_id"]), metrics, _node_count(runs), uri)
    except RadtrackError:
        if metrics:  # which of them, the close names, and the command that lists them all
            _unknown_metrics(experiment, workload, metrics, list(runs["run_id"]), uri)
        raise
    wide = resample(series, every)
    metric_cols = [c for c in wide.columns if c not in ("run_id", "seconds")]
    info = runs[IDENTITY + ["start_time"]
                + [c for c in runs.columns if c.startswith(("param.", "tag."))]]
    out = wide.merge(info, on="run_id", how="left")
    out["time"] = out.pop("start_time") + pd.to_timedelta(out["seconds"], unit="s")
    extra = [c for c in info.columns if c.startswith(("param.", "tag."))]
    out = out[IDENTITY + ["seconds", "time"] + metric_cols + extra]
    out, by = by_node(out, metric_cols)
    order = {run_id: i for i, run_id in enumerate(runs["run_id"])}
    out = out.sort_values(["run_id", *by, "seconds"], key=lambda c: c.map(order) if c.name == "run_id"
                          else c, kind="stable")
    return out.reset_index(drop=True)


def _node_count(runs: pd.DataFrame) -> int:
    """The most nodes any of ``runs`` ran on (1: none spans nodes)."""
    tag = pd.to_numeric(runs.get(f"tag.{schema.NODES}", pd.Series(dtype=float)), errors="coerce")
    return int(tag.max()) if tag.notna().any() else 1


def _load(run_ids: list[str], metrics: list[str] | None, nodes: int, uri: str) -> pd.DataFrame:
    """``metrics`` of the runs, and the same series of every other node of a multi-node run
    (``node<K>/<key>``) where a node has them."""
    if not metrics or nodes < 2:
        return load_series(run_ids, metrics=metrics, tracking_uri=uri)
    scoped = [f"{schema.node_scope(k)}/{m}" for k in range(1, nodes) for m in metrics]
    try:
        return load_series(run_ids, metrics=[*metrics, *scoped], tracking_uri=uri)
    except RadtrackError:  # a node without one of them: node by node, what each has
        parts = [load_series(run_ids, metrics=metrics, tracking_uri=uri)]
        for key in scoped:
            with contextlib.suppress(RadtrackError):
                parts.append(load_series(run_ids, metrics=[key], tracking_uri=uri))
        return pd.concat(parts, ignore_index=True)


def by_node(frame: pd.DataFrame, metric_cols: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """A multi-node run's rows, one per node and step: node K's series (``node<K>/<key>``:
    radtrack/vocab/schema.py split_node) under their plain names in rows whose ``node`` is
    K, node 0's in rows of node 0, a ``node`` column after the run's identity. ``frame`` as
    it is (and no sort key) where no series is node-scoped."""
    scoped = {c: schema.split_node(c) for c in metric_cols}
    nodes = sorted({n for n, _ in scoped.values() if n is not None})
    if not nodes:
        return frame, []
    plain = [c for c in metric_cols if scoped[c][0] is None]
    rest = [c for c in frame.columns if c not in metric_cols]
    parts = [frame[rest + plain].assign(node=0)]
    for node in nodes:
        cols = {c: scoped[c][1] for c in metric_cols if scoped[c][0] == node}
        part = frame[rest + list(cols)].rename(columns=cols).assign(node=node)
        parts.append(part.dropna(how="all", subset=list(cols.values())))
    parts[0] = parts[0].dropna(how="all", subset=plain) if plain else parts[0]
    out = pd.concat(parts, ignore_index=True)
    names = list(dict.fromkeys(plain + [v for _, v in scoped.values()]))
    ident = rest[:rest.index("seconds")]
    out = out[ident + ["node"] + rest[len(ident):len(ident) + 2] + names + rest[len(ident) + 2:]]
    return out, ["node"]


def _export_runs(experiment: str, workload: int | None, uri: str) -> pd.DataFrame:
    """The runs an export covers: the experiment's (or one workload's) and their scripts'."""
    runs = load_runs(experiment, tracking_uri=uri)
    if workload is not None:
        if not (runs["workload"] == workload).any():
            known = ", ".join(str(w) for w in sorted(runs["workload"].dropna().unique()))
            raise RadtrackError(f"experiment {experiment!r} has no workload {workload} "
                                f"(workloads: {known or 'none'})")
        runs = runs[runs["workload"] == workload]
    # the runs the rows' scripts made (their own metrics next to their span's hardware
    # series; docs/mlflow-code.md), in this experiment or another one of the same store
    linked = load_script_runs(runs, tracking_uri=uri)
    if not linked.empty:
        linked = linked[~linked["run_id"].isin(runs["run_id"])]
        runs = pd.concat([runs, linked.drop(columns=["row_run_id", "row_run_name"])],
                         ignore_index=True)
    if runs.empty:
        raise RadtrackError(f"experiment {experiment!r} has no runs to export")
    return runs


def metric_names(experiment: str, workload: int | None = None,
                 tracking_uri: str | None = None) -> list[str]:
    """Every metric key ``--metrics`` takes for these runs (``radtrack export --list-metrics``)."""
    uri = resolve_tracking_uri(tracking_uri)
    return list_metrics(list(_export_runs(experiment, workload, uri)["run_id"]), tracking_uri=uri)


def _unknown_metrics(experiment: str, workload: int | None, metrics: list[str],
                     run_ids: list[str], uri: str) -> None:
    """RadtrackError naming the metrics these runs do not have, with the close names."""
    known = list_metrics(run_ids, tracking_uri=uri)
    missing = [m for m in metrics if m not in known]
    if not missing:
        return
    lines = []
    for m in missing:
        close = [k for k in known if m.lower() in k.lower()]
        close += [k for k in difflib.get_close_matches(m, known, n=5, cutoff=0.5)
                  if k not in close]
        lines.append(f"{m!r}" + (f" (close: {', '.join(close[:5])})" if close else ""))
    scope = experiment if workload is None else f"{experiment} --workload {workload}"
    raise RadtrackError(f"unknown metric {'; '.join(lines)} in experiment {experiment!r}; "
                        f"'radtrack export {scope} --list-metrics' lists all {len(known)}")


#: the columns table's name for an export (its ``table`` field)
TABLE = "export"


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The wide table's metric columns: those between ``time`` and the params and tags."""
    fixed = {*IDENTITY, "seconds", "time"}
    return [c for c in frame.columns if c not in fixed and not c.startswith(("param.", "tag."))]


def column_meanings(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns table of ``frame``: a row per column (identity, time grid, metrics,
    params and tags) with radtrack/vocab/meaning.py's :data:`COLUMN_FIELDS`, the same table
    ``radtrack report``'s files carry."""
    return pd.DataFrame([column_row(str(c), TABLE) for c in frame.columns], columns=list(COLUMN_FIELDS))


def dictionary_path(out: Path) -> Path:
    """Where a CSV export's data dictionary goes: ``wide.csv`` -> ``wide.columns.csv``."""
    return out.with_name(f"{out.stem}.columns{out.suffix or '.csv'}")


def write(frame: pd.DataFrame, out: Path, fmt: str, raw: bool = False) -> Path | None:
    """Write the table; returns the CSV's data dictionary's path (None for Parquet, whose
    columns carry their meaning in their field metadata)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    meanings = column_meanings(frame)
    if fmt == "csv":  # formula-like text cells neutralised unless --raw (radtrack/csvsafe.py)
        (frame if raw else safe_frame(frame)).to_csv(out, index=False)
        side = dictionary_path(out)
        (meanings if raw else safe_frame(meanings)).to_csv(side, index=False)
        return side
    write_parquet(frame, out, meanings)
    return None


build_parser = export_parser  # the arguments live in radtrack/reader_args.py (light to import)


def main(argv: list[str] | None = None) -> int:
    args = export_args(list(sys.argv[1:] if argv is None else argv))
    if args.list_metrics:
        try:
            print("\n".join(metric_names(args.experiment, args.workload, args.tracking_uri)))
        except RadtrackError as exc:
            print(f"radtrack export: {exc}", file=sys.stderr)
            return exc.exit_code
        return 0
    try:
        every = parse_every(args.every)
    except ValueError as exc:
        print(f"radtrack export: {exc}", file=sys.stderr)
        return 2
    fmt = args.fmt or ("csv" if args.out.suffix.lower() == ".csv" else "parquet")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    try:
        frame = export_table(args.experiment, args.workload, every, metrics, args.tracking_uri)
        side = write(frame, args.out, fmt, args.raw)
    except RadtrackError as exc:
        print(f"radtrack export: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"radtrack export: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    runs = frame["run_id"].nunique()
    said = (f"; what each column is (scope, unit, meaning) in {side}" if side is not None
            else "; what each column is (scope, unit, meaning) in its field metadata")
    print(f"wrote {args.out}: {len(frame)} rows ({runs} run(s), every {every:g} s), "
          f"{len(frame.columns)} columns ({fmt}){said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
