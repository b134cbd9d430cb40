"""The arguments of the reader commands (``radtrack report``, ``export``, ``ui``), in a module
that imports nothing heavy: ``--help`` and a mistyped option answer at once, before MLflow,
pandas or Dash load (3-4 CPU-s on a 2-core host). The commands' own modules
(radtrack/analysis/report.py, radtrack/export.py, radtrack/frontend/app.py) build their parsers here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

REPORT_FORMATS = ("table", "csv", "json", "parquet")
EXPORT_FORMATS = ("parquet", "csv")
#: radtrack report --correlate's methods (radtrack/compute/correlation.py)
CORRELATION_METHODS = ("pearson", "spearman")
_URI_HELP = "MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)"


def target(text: str) -> tuple[str, float]:
    """``--target METRIC=VALUE``."""
    metric, sep, value = text.rpartition("=")
    try:
        if not sep or not metric:
            raise ValueError
        return metric, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--target wants METRIC=VALUE such as val_acc=0.92, got {text!r}") from None


def positive(text: str) -> float:
    """``--bin SECONDS``: a positive number."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--bin wants a positive number of seconds, got {text!r}")
    return value


def report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="radtrack report",
        description="Summaries, co-location interference and variability of an experiment, "
                    "or the correlation matrix of a run's metrics.")
    p.add_argument("experiment", nargs="?", help="experiment name or id")
    p.add_argument("--workload", type=int, help="only this workload's rows")
    p.add_argument("--user", metavar="NAME", help="only the runs NAME launched (MLflow's "
                                                  "mlflow.user tag)")
    p.add_argument("--target", type=target, metavar="METRIC=VALUE",
                   help="time-to-target: first time METRIC reaches VALUE, e.g. val_acc=0.92")
    p.add_argument("--target-mode", choices=("max", "min"), default="max",
                   help="max: reached when >= VALUE (accuracy); min: when <= VALUE (loss)")
    p.add_argument("--study", metavar="NAME", help="a study's tables instead (power-variation, "
                   "multi-level-utilisation, time-to-accuracy, host-gpu-eda, attribution; docs/analysis.md)")
    p.add_argument("--chart", type=Path, metavar="FILE", help="with --study: its chart (.png/.svg/.pdf)")
    p.add_argument("--correlate", metavar="RUN_ID", action="append",
                   help="print the correlation matrix of this run's metrics "
                        "(repeat to pool several runs)")
    p.add_argument("--metrics", help="comma-separated metric keys for --correlate "
                                     "(default: every metric of the run)")
    p.add_argument("--bin", type=positive, default=1.0, metavar="SECONDS",
                   help="time grid for --correlate (default 1 s)")
    p.add_argument("--method", choices=CORRELATION_METHODS, default="pearson",
                   help="correlation method")
    p.add_argument("--baseline", metavar="EXP", help="take every co-located run's solo baseline "
                   "from experiment EXP (default: the same script, params and host in the "
                   "experiment itself, else in any other; docs/analysis.md)")
    p.add_argument("--wide", action="store_true", help="print every column, one line per row "
                   "(default: within 120 columns)")
    p.add_argument("--format", choices=REPORT_FORMATS, default="table", dest="fmt",
                   help="table (default): the printed report; json: every table and a columns "
                        "table (table, name, scope, unit, meaning) in one document; csv: one table "
                        "on stdout (--table), or with --out STEM.csv every table as STEM.<table>.csv "
                        "and the columns table as STEM.columns.csv; parquet (needs --out): as csv, "
                        "each field's scope, unit and meaning in its metadata (docs/analysis.md)")
    p.add_argument("--table", metavar="NAME", help="csv on stdout: which table to print (default "
                   "runs; interference, workloads, variability, own_metrics, windows, scripts, "
                   "monitoring, nodes, energy_parts, checks, or columns)")
    p.add_argument("--out", type=Path, help="write the result here in --format")
    p.add_argument("--raw", action="store_true", help="csv: write text cells as they are, "
                   "without neutralising those a spreadsheet would run as formulas")
    p.add_argument("--tracking-uri", help=_URI_HELP)
    return p


def export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="radtrack export",
        description="Write an experiment's runs as one wide, time-aligned table: a row per run "
                    "and time step, a column per metric (mean over the step; last value for "
                    "counters such as energy_j), the runs' params and tags as columns.")
    p.add_argument("experiment", help="experiment name or id")
    p.add_argument("--workload", type=int, help="only this workload's rows")
    p.add_argument("--every", default="1s", help="time step: 1s (default), 500ms, 2m, 0.5")
    p.add_argument("--metrics", help="comma-separated metric keys (default: every metric)")
    p.add_argument("--format", choices=EXPORT_FORMATS, default=None, dest="fmt",
                   help="parquet or csv (default: from the --out suffix, else parquet)")
    p.add_argument("--out", type=Path, help="the file to write (required unless --list-metrics)")
    p.add_argument("--list-metrics", action="store_true",
                   help="print the metric keys --metrics takes for these runs, and exit")
    p.add_argument("--raw", action="store_true", help="csv: write text cells as they are, "
                   "without neutralising those a spreadsheet would run as formulas")
    p.add_argument("--tracking-uri", help=_URI_HELP)
    return p


def export_args(argv: list[str]) -> argparse.Namespace:
    """``radtrack export``'s arguments, with its one rule across them checked."""
    parser = export_parser()
    args = parser.parse_args(argv)
    if not args.list_metrics and args.out is None:
        parser.error("--out FILE is required (or --list-metrics)")
    return args


def ui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="radtrack ui",
        description="Browse radtrack runs: experiment -> workload -> co-located runs, "
                    "overlaid hardware and ML metrics.")
    parser.add_argument("--tracking-uri", default=None, help=_URI_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8050, help="port (default 8050)")
    parser.add_argument("--views-dir", type=Path, default=None,
                        help="folder for saved views (default: $RADTRACK_HOME/views, else ./.radtrack/views)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, dev tools); "
                        "only with a loopback --host")
    return parser


#: the reader commands' argument checks, run before their modules load
CHECKS = {"report": lambda argv: report_parser().parse_args(argv),
          "export": export_args,
          "ui": lambda argv: ui_parser().parse_args(argv)}
