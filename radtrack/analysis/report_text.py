"""The printed ``radtrack report``: its tables as text a person can read.

By default every line fits :data:`radtrack.analysis.text_table.WIDTH` (120) columns, the
title included: each table shows a chosen set of columns, split into blocks each led by its
key columns (the run's name; a variability row's file and params) where they do not fit
side by side, long text cut with '…', and what would be a wide text column (notes, solo
runs, checks, energy notes) printed as lines below it or in the Checks section. A column
is printed under its one name, the files' (``duration_s``, ``proc_cpu_pct_mean``,
``cpu_pct_mean``), and the legend under each table gives its meaning, scope and unit from
radtrack/vocab/meaning.py, as the files' columns table does; a '-' cell says why it is
blank; counts are whole numbers. ``--wide`` prints every column of the old view, one line
per row, uncut; ``--format csv/json/parquet`` files carry every column of every table
(radtrack/analysis/report_files.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from radtrack.analysis.text_table import WIDTH, fit, render, wrap

#: every table of the report, in its order: json holds each (empty or not), csv and parquet
#: write a file of each (docs/analysis.md, Formats)
REPORT_TABLES = ("runs", "interference", "workloads", "variability", "own_metrics", "windows", "scripts",
                 "monitoring", "nodes", "energy_parts", "checks")


@dataclass
class ExperimentReport:
    experiment: str
    runs: pd.DataFrame  # per-run summary: identity columns + summary statistics
    interference: pd.DataFrame
    variability: pd.DataFrame
    workloads: pd.DataFrame  # co-located workloads: energy, STP, ANTT, energy vs serial
    footprint: str = ""  # the experiment's energy and CO2e, one line
    scripts: pd.DataFrame | None = None  # the runs the scripts made (analysis/script_runs.py)
    monitoring: pd.DataFrame | None = None  # what watching each run cost (monitoring_cost.py)
    checks: pd.DataFrame | None = None  # results that cannot be trusted as they stand (result_checks.py)
    blanks: dict[str, dict[str, str]] | None = None  # run id -> column -> why it is blank
    nodes: pd.DataFrame | None = None  # multi-node runs per node and in all (node_figures.py)
    energy_parts: pd.DataFrame | None = None  # each run's devices and rails (energy_parts.py)
    own_metrics: pd.DataFrame | None = None  # the script's own metrics by run (report_own.py)
    windows: pd.DataFrame | None = None  # the script's code windows by run (report_own.py)

    def __post_init__(self) -> None:
        for name in REPORT_TABLES:  # counts are whole numbers in every format
            frame = getattr(self, name)
            if frame is not None:
                setattr(self, name, whole_counts(frame))

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table, empty ones included: a file's schema never depends on the data."""
        return {name: pd.DataFrame() if (frame := getattr(self, name)) is None else frame
                for name in REPORT_TABLES}


def whole_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its count columns (radtrack/vocab/meaning.py is_count) as integers."""
    from radtrack.vocab.meaning import is_count

    counts = [c for c in frame.columns if is_count(str(c))]
    if not counts:
        return frame
    out = frame.copy()
    for c in counts:
        number = pd.to_numeric(out[c], errors="coerce")
        if number.notna().sum() == out[c].notna().sum():  # numbers only (node's 'all' stays)
            out[c] = number.round().astype("Int64")
    return out


# --wide: the columns worth a glance, one line per row (files carry every column)
WIDE_RUN_VIEW = ["run_name", "node", "host", "user", "launch", "gpu_used", "workload", "letter", "status", "collocation",
                 "sharing", "duration_s", "samples", "energy_j", "energy_j_ci95_pct", "attribution", "gpu_energy_j",
                 "cpu_energy_j", "activity_energy_j", "co2e_g", "power_w_mean", "power_w_p95", "power_w_max",
                 "gpu_util_pct_mean", "sm_active_pct_mean", "mem_used_mib_max", "temp_c_max",
                 "sm_clock_mhz_mean", "proc_cpu_pct_mean", "cpu_pct_mean", "rss_mib_max", "energy_note",
                 "checks"]
WIDE_INTERFERENCE_VIEW = ["run_name", "collocation", "sharing", "slowdown", "slowdown_lo", "slowdown_hi",
                          "slowdown_basis", "duration_s", "solo_duration_s", "work_unit", "energy_j",
                          "energy_j_ci95_pct", "attribution", "energy_per_unit_j", "solo_energy_per_unit_j",
                          "energy_per_unit_change_pct", "energy_per_unit_change_pct_lo",
                          "energy_per_unit_change_pct_hi", "interval_df", "solo_runs", "baseline_rule", "checks",
                          "interval_note", "note"]
WIDE_WORKLOAD_VIEW = ["workload", "launch", "rows", "collocation", "sharing", "duration_s", "energy_j",
                      "energy_j_ci95_pct", "co2e_g", "idle_energy_j", "other_energy_j", "work", "work_unit",
                      "energy_per_unit_j", "stp", "stp_lo", "stp_hi", "antt", "antt_lo", "antt_hi",
                      "serial_energy_j", "energy_vs_serial_pct", "energy_vs_serial_pct_lo", "energy_vs_serial_pct_hi",
                      "interval_note", "note"]
SCRIPT_VIEW = ["run_name", "row_run_name", "script_experiment", "status", "duration_s",
               "energy_j", "power_w_mean", "gpu_util_pct_mean", "proc_cpu_pct_mean", "cpu_pct_mean"]
VARIABILITY_VIEW_FIXED = ["file", "params", "collocation", "rows_in_workload", "gpu", "n"]
#: what a variability row is about: kept at the head of every block of the table
VARIABILITY_KEY = ["file", "params"]
WINDOW_VIEW = ["run_name", "window", "count", "duration_s", "share_of_span_pct", "energy_j", "energy_j_ci95_pct",
               "share_of_energy_pct", "gpu_energy_j", "cpu_energy_j", "below_resolution"]

# the default (fitted) views: the run's name leads every block
RUN_VIEW = ["run_name", "node", "host", "status", "sharing", "duration_s", "samples", "energy_j", "energy_j_ci95_pct",
            "power_w_mean", "gpu_util_pct_mean", "proc_cpu_pct_mean", "cpu_pct_mean", "checks",
            "gpu_used", "user", "launch", "attribution", "gpu_energy_j", "cpu_energy_j", "activity_energy_j",
            "co2e_g",
            "power_w_p95", "power_w_max", "sm_active_pct_mean", "mem_used_mib_max", "temp_c_max",
            "sm_clock_mhz_mean", "rss_mib_max"]
INTERFERENCE_VIEW = ["run_name", "sharing", "slowdown", "slowdown_lo", "slowdown_hi", "slowdown_basis",
                     "duration_s", "solo_duration_s", "energy_j", "energy_per_unit_j",
                     "solo_energy_per_unit_j", "energy_per_unit_change_pct", "energy_per_unit_change_pct_lo",
                     "energy_per_unit_change_pct_hi", "checks"]
WORKLOAD_VIEW = ["workload", "rows", "sharing", "duration_s", "energy_j", "energy_j_ci95_pct", "stp",
                 "stp_lo", "stp_hi", "antt", "antt_lo", "antt_hi", "serial_energy_j", "energy_vs_serial_pct",
                 "energy_vs_serial_pct_lo", "energy_vs_serial_pct_hi", "launch", "co2e_g", "idle_energy_j",
                 "other_energy_j", "work", "work_unit", "energy_per_unit_j"]

#: columns whose name says all: no legend entry
_SELF_EVIDENT = frozenset({"run_name", "status", "user", "launch", "workload", "experiment", "file", "run_id",
                           "letter"})
#: the Multi-node runs section's printed columns: each node's facts (its figures are in the
#: per-run summary's node rows; the files keep every column)
NODE_VIEW = ["run_name", "node", "host", "status", "exit_code", "co2e_g", "clock_offset_ms",
             "clock_error_ms", "why"]


def column_legend(column: str, table: str = "") -> str | None:
    """``name: what it is (unit)`` for one printed column, in the owner's words
    (radtrack/vocab/meaning.py, the same the files' columns tables carry); None for a
    column whose name says all (names, statuses, launch ids) or that no one describes."""
    from radtrack.vocab.meaning import column_meaning

    meaning = column_meaning(column, table)
    if column in _SELF_EVIDENT or not meaning.declared:
        return None
    # a script's own metric is labelled by its name already ("loss: the script's own metric")
    return meaning.label if meaning.label.startswith(f"{column}: ") else f"{column}: {meaning.label}"


def _legend(columns: list[str], frame: pd.DataFrame, wide: bool, table: str = "") -> str | None:
    if wide:
        return None
    shown = [text for c in columns if c in frame.columns and (text := column_legend(c, table))]
    if not shown:
        return None
    return wrap("Columns: " + "; ".join(shown) + ".", indent="  ")


def _blank_legend(report: ExperimentReport, table: pd.DataFrame) -> str:
    """Why the '-' cells of the runs table are blank, grouped by reason."""
    names = dict(zip(table.get("run_id", []), table.get("run_name", []), strict=True))
    by_reason: dict[str, list[str]] = {}
    for run_id, blanks in (report.blanks or {}).items():
        for reason in dict.fromkeys(blanks.values()):
            by_reason.setdefault(reason, []).append(str(names.get(run_id, run_id[:8])))
    lines = ["'-': no value. " + ("Blank because: " if by_reason else "")
             + "; ".join(f"{reason} ({', '.join(runs)})" for reason, runs in by_reason.items())]
    return wrap(lines[0], indent="  ")


def _view(frame: pd.DataFrame, columns: list[str], wide: bool, key: str | list[str] | None) -> str:
    if wide:
        return render(frame, columns)
    keys = [key] if isinstance(key, str) else key
    return fit(frame, columns, key=keys)


def _baselines(inter: pd.DataFrame) -> list[str]:
    """Which solo runs each co-located run was measured against (or why none)."""
    lines = []
    for row in inter.to_dict("records"):
        if row.get("solo_runs"):
            lines.append(wrap(f"{row['run_name']}: {row['solo_runs']} ({row.get('baseline_rule', '')})",
                              first="    ", indent="      "))
        elif row.get("note"):
            lines.append(wrap(f"{row['run_name']}: {row['note']}", first="    ", indent="      "))
    return lines


def _row_notes(frame: pd.DataFrame, key: str, notes: bool = True) -> list[str]:
    """A table's notes the views leave out: each row's ``note`` where it has baselines (a
    blank slowdown's reason), and the rows without a 95 % interval, with why
    (``interval_note``: no repeats, how to declare them), said once."""
    out = []
    for row in frame.to_dict("records") if notes else []:
        if row.get("solo_runs") and isinstance(row.get("note"), str) and row["note"]:
            out.append(wrap(f"{row[key]}: {row['note']}", first="    ", indent="      "))
    out = ["  notes:", *out] if out else []
    why: dict[str, list[str]] = {}
    for row in frame.to_dict("records"):
        if isinstance(row.get("interval_note"), str) and row["interval_note"]:
            why.setdefault(row["interval_note"], []).append(str(row[key]))
    for text, names in why.items():
        out.append(wrap(f"Intervals ({', '.join(names)}): {text}.", first="  ", indent="    "))
    return out


def _checks(checks: pd.DataFrame | None) -> list[str]:
    if checks is None or checks.empty:
        return ["", "Checks: none of the results above is flagged"]
    out = ["", f"Checks ({len(checks)}): results that cannot be trusted as they stand"]
    for row in checks.to_dict("records"):
        figure = "" if row["figure"] == "*" else f" [{row['figure']}]"
        out.append(wrap(f"- {row['run_name']}{figure} {row['check']}: {row['why']}. Do: {row['todo']}.",
                        indent="    "))
    return out


def _section(frame: pd.DataFrame | None, title: str, columns: list[str], wide: bool, table: str,
             key: str | list[str] | None = "run_name") -> list[str | None]:
    """A titled table with its legend; nothing where ``frame`` is empty."""
    if frame is None or frame.empty:
        return []
    shown = columns if not wide else [c for c in frame.columns if c != "run_id"]
    return ["", wrap(title), _view(frame, shown, wide, key), _legend(shown, frame, wide, table)]


def _title(report: ExperimentReport, count: int) -> str:
    """The report's first line, its experiment's name cut (with '…') to fit the width."""
    tail = f": {count} run(s)"
    room = WIDTH - len("experiment ") - len(tail)
    name = report.experiment if len(report.experiment) <= room else report.experiment[: room - 1] + "…"
    return f"experiment {name}{tail}"


def render_report(report: ExperimentReport, wide: bool = False) -> str:
    """The printed report: every line within 120 columns unless ``wide``."""
    runs = report.runs
    extra = [c for c in runs.columns
             if (c.startswith("throughput_") and c.endswith("_mean"))
             or (c.startswith("energy_per_") and c.endswith("_j")) or c.startswith("time_to_target")]
    var_cols = VARIABILITY_VIEW_FIXED + [c for c in report.variability.columns
                                         if c.endswith(("_mean", "_cv"))]
    run_view = (WIDE_RUN_VIEW if wide else RUN_VIEW) + extra
    inter_view = WIDE_INTERFERENCE_VIEW if wide else INTERFERENCE_VIEW
    count = runs["run_id"].nunique() if "run_id" in runs else len(runs)  # node rows are no runs
    parts: list[str | None] = [_title(report, count) if not wide else f"experiment {report.experiment}: "
                               f"{count} run(s)", *([wrap(report.footprint)] if report.footprint else []),
                               "", "Per-run summary", _view(runs, run_view, wide, ["run_name", "node"])]
    if not runs.empty:
        parts += [_legend(run_view, runs, wide, "runs"), _blank_legend(report, runs)]
    parts += ["", wrap("Co-location interference (against solo runs of the same File + params on the same "
                       "host: docs/analysis.md, How baselines are found)")]
    inter = report.interference
    if inter.empty:
        parts.append("(no co-located workloads)")
    else:
        parts += [_view(inter, inter_view, wide, "run_name"), _legend(inter_view, inter, wide, "interference")]
        parts += ["  Baselines used:", *_baselines(inter)]
        if not wide:
            parts += _row_notes(inter, "run_name")
    parts += ["", wrap("Co-located workloads (measured energy: GPUs, and CPU/DRAM where read; STP, ANTT and "
                       "energy vs the same rows run one after another, against their solo runs)")]
    workloads = report.workloads
    if workloads.empty:
        parts.append("(no co-located workloads)")
    else:
        view = WIDE_WORKLOAD_VIEW if wide else WORKLOAD_VIEW
        parts += [_view(workloads, view, wide, "workload"), _legend(view, workloads, wide, "workloads")]
        if not wide:
            notes = [wrap(f"workload {w['workload']}: {w['note']}", first="    ", indent="      ")
                     for w in workloads.to_dict("records") if isinstance(w.get("note"), str) and w["note"]]
            parts += ["  notes:", *notes] if notes else []
            parts += _row_notes(workloads, "workload", notes=False)
    parts += ["", "Run-to-run variability (repeats of one configuration, per GPU model)"]
    if report.variability.empty:
        parts.append("(no configuration was run more than once)")
    else:  # every block keeps what the configuration is
        parts += [_view(report.variability, var_cols, wide, VARIABILITY_KEY),
                  _legend(var_cols, report.variability, wide, "variability")]
    own = report.own_metrics
    if own is not None and not own.empty:
        own_cols = ["run_name", *[c for c in own.columns if c not in ("run_id", "run_name")]]
        parts += _section(own, "The scripts' own metrics (last value logged; the run's span beside it)",
                          own_cols, wide, "own_metrics")
    parts += _section(report.windows, "Code windows (each window's time and energy summed over the times it "
                      "ran, with the energy's 95 % interval, and their share of the run's span and energy)",
                      WINDOW_VIEW, wide, "windows", ["run_name", "window"])
    scripts = report.scripts
    if scripts is not None and not scripts.empty:
        script_own = [c for c in scripts.columns if c not in SCRIPT_VIEW and c not in report.runs.columns
                      and c != "run_id"]
        parts += _section(scripts, "Runs the scripts made (their own metrics; hardware of each run's span)",
                          SCRIPT_VIEW[:4] + script_own + SCRIPT_VIEW[4:], wide, "scripts")
    cost = report.monitoring
    if cost is not None and not cost.empty:
        parts += _section(cost, "Monitoring cost (CPU-seconds of the listeners and of the launcher's storing, "
                          "% of one core over the run)", [c for c in cost.columns if c != "run_id"], wide,
                          "monitoring", "run_name" if "run_name" in cost else None)
    nodes = report.nodes
    if nodes is not None and not nodes.empty:
        parts += _section(nodes, "Multi-node runs (each node's part and all of them: status, exit code, "
                          "clock offset to node 0 and its error in ms; each node's figures are its row in the "
                          "per-run summary; docs/sheets.md, Multi-node rows)", NODE_VIEW, wide, "nodes")
    energy = report.energy_parts
    if energy is not None and not energy.empty:
        parts += _section(energy, "Energy by part (J over each run's span: each device the run measured, in "
                          "energy_j; each power rail inside a device, never added to it)",
                          [c for c in energy.columns if c != "run_id"], wide, "energy_parts")
    parts += _checks(report.checks)
    return "\n".join(p for p in parts if p is not None)
