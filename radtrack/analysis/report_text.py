"""The printed ``radtrack report``: its tables as text a person can read.

By default every line fits :data:`radtrack.analysis.text_table.WIDTH` (120) columns: each
table shows a chosen set of columns, split into blocks led by the run's name where they do
not fit side by side, long text cut with '…', and what would be a wide text column (notes,
solo runs, checks, energy notes) printed as lines below it or in the Checks section. Headers name the scope where a bare name
would mislead (``host_cpu_pct`` is the whole host's CPU, ``run_cpu_pct`` the run's own
processes'), a legend gives each column's meaning and unit, and a '-' cell says why it is
blank. ``--wide`` prints every column of the old view, one line per row, uncut;
``--format csv/json/parquet`` files carry every column of every table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from radtrack.analysis.text_table import fit, render, wrap


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

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {"runs": self.runs, "interference": self.interference,
               "workloads": self.workloads, "variability": self.variability}
        if self.checks is not None and not self.checks.empty:
            out["checks"] = self.checks
        if self.scripts is not None and not self.scripts.empty:  # runs the scripts made
            out["scripts"] = self.scripts
        if self.monitoring is not None and not self.monitoring.empty:
            out["monitoring"] = self.monitoring
        if self.nodes is not None and not self.nodes.empty:
            out["nodes"] = self.nodes
        if self.energy_parts is not None and not self.energy_parts.empty:
            out["energy_parts"] = self.energy_parts
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
                          "energy_per_unit_change_pct", "solo_runs", "baseline_rule", "checks", "note"]
WIDE_WORKLOAD_VIEW = ["workload", "launch", "rows", "collocation", "sharing", "duration_s", "energy_j",
                      "energy_j_ci95_pct", "co2e_g", "idle_energy_j", "other_energy_j", "work", "work_unit",
                      "energy_per_unit_j", "stp", "antt", "serial_energy_j", "energy_vs_serial_pct", "note"]
SCRIPT_VIEW = ["run_name", "row_run_name", "script_experiment", "status", "duration_s",
               "energy_j", "power_w_mean", "gpu_util_pct_mean", "proc_cpu_pct_mean", "cpu_pct_mean"]
VARIABILITY_VIEW_FIXED = ["file", "params", "collocation", "rows_in_workload", "gpu", "n"]

# the default (fitted) views: the run's name leads every block
RUN_VIEW = ["run_name", "node", "host", "status", "sharing", "duration_s", "samples", "energy_j", "energy_j_ci95_pct",
            "power_w_mean", "gpu_util_pct_mean", "proc_cpu_pct_mean", "cpu_pct_mean", "checks",
            "gpu_used", "user", "launch", "attribution", "gpu_energy_j", "cpu_energy_j", "activity_energy_j",
            "co2e_g",
            "power_w_p95", "power_w_max", "sm_active_pct_mean", "mem_used_mib_max", "temp_c_max",
            "sm_clock_mhz_mean", "rss_mib_max"]
INTERFERENCE_VIEW = ["run_name", "sharing", "slowdown", "slowdown_lo", "slowdown_hi", "slowdown_basis",
                     "duration_s", "solo_duration_s", "energy_j", "energy_per_unit_j",
                     "solo_energy_per_unit_j", "energy_per_unit_change_pct", "checks"]
WORKLOAD_VIEW = ["workload", "rows", "sharing", "duration_s", "energy_j", "energy_j_ci95_pct", "stp",
                 "antt", "serial_energy_j", "energy_vs_serial_pct", "launch", "co2e_g", "idle_energy_j",
                 "other_energy_j", "work", "work_unit", "energy_per_unit_j"]

#: the printed header of a column whose bare name would mislead (files keep the name)
HEADERS = {
    "duration_s": "span_s",
    "solo_duration_s": "solo_span_s",
    "cpu_pct_mean": "host_cpu_pct",
    "proc_cpu_pct_mean": "run_cpu_pct",
    "energy_j_ci95_pct": "energy_ci95_pct",
    "gpu_util_pct_mean": "gpu_util_pct",
    "power_w_mean": "power_w",
}

#: what each printed column means where radtrack/store/meaning.py has no more to say
#: (the run's span, counts, the interference figures); every other column's label is
#: meaning.describe's: scope and unit (docs/analysis.md, What each figure means)
LEGEND = {
    "sharing": "sharing: what the run shared (solo, GPU time-slicing / own GPU, host shared / CPU only, shared / MPS with N "
               "other runs, MIG slice), as the page's labels say",
    "duration_s": "span_s: the run's span, its script's first to last process (s)",
    "solo_duration_s": "solo_span_s: the solo runs' mean span (s)",
    "samples": "samples: the fewest readings any of the run's hardware series holds in its span",
    "slowdown": "slowdown: solo rate / co-located rate (or co-located / solo span): 1 = no interference",
    "slowdown_lo": "slowdown_lo/_hi: its 95 % interval from the repeats' spread (- without repeats)",
    "energy_per_unit_j": "energy_per_unit_j: energy_j per unit of the script's work (J/unit)",
    "solo_energy_per_unit_j": "solo_energy_per_unit_j: the solo runs' (J/unit)",
    "energy_per_unit_change_pct": "energy_per_unit_change_pct: energy per unit of work vs solo (%)",
    "stp": "stp: system throughput, sum of 1/slowdown (n = no interference)",
    "antt": "antt: mean slowdown",
    "serial_energy_j": "serial_energy_j: the rows' energy run solo one after another (J)",
    "energy_vs_serial_pct": "energy_vs_serial_pct: the workload's energy vs serial_energy_j (%)",
    "checks": "checks: results that cannot be trusted as they stand (see Checks below)",
    "node": "node: a multi-node run's own row ('all': the whole run, its span and energy over "
            "every node, its power, utilisation and CPU per node) and one row per node (0, 1, ...: "
            "that node's own figures)",
    "host": "host: the node's host",
}
#: the Multi-node runs section's printed columns: each node's facts (its figures are in the
#: per-run summary's node rows; the files keep every column)
NODE_VIEW = ["run_name", "node", "host", "status", "exit_code", "co2e_g", "clock_offset_ms",
             "clock_error_ms", "why"]


def column_legend(column: str) -> str | None:
    """``header: what it is (unit)`` for one printed column; None for a column that says
    itself (names, statuses, launch ids)."""
    if column in LEGEND:
        return LEGEND[column]
    from radtrack.store.meaning import describe

    meaning = describe(column)
    if not meaning.declared or not meaning.unit_text:
        return None
    return f"{HEADERS.get(column, column)}: {meaning.label}"


def _legend(columns: list[str], frame: pd.DataFrame, wide: bool) -> str | None:
    if wide:
        return None
    shown = [text for c in columns if c in frame.columns and (text := column_legend(c))]
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
    return fit(frame, columns, key=keys, headers=HEADERS)


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


def _checks(checks: pd.DataFrame | None) -> list[str]:
    if checks is None or checks.empty:
        return ["", "Checks: none of the results above is flagged"]
    out = ["", f"Checks ({len(checks)}): results that cannot be trusted as they stand"]
    for row in checks.to_dict("records"):
        figure = "" if row["figure"] == "*" else f" [{row['figure']}]"
        out.append(wrap(f"- {row['run_name']}{figure} {row['check']}: {row['why']}. Do: {row['todo']}.",
                        indent="    "))
    return out


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
    parts: list[str | None] = [f"experiment {report.experiment}: {count} run(s)",
             *([wrap(report.footprint)] if report.footprint else []),
             "", "Per-run summary", _view(runs, run_view, wide, ["run_name", "node"])]
    if not runs.empty:
        parts += [_legend(run_view, runs, wide), _blank_legend(report, runs)]
    parts += ["", wrap("Co-location interference (against solo runs of the same File + params on the same "
                       "host: docs/analysis.md, How baselines are found)")]
    inter = report.interference
    if inter.empty:
        parts.append("(no co-located workloads)")
    else:
        parts.append(_view(inter, inter_view, wide, "run_name"))
        if not wide:
            parts.append(_legend(inter_view, inter, wide))
        parts += ["  Baselines used:", *_baselines(inter)]
    parts += ["", wrap("Co-located workloads (measured energy: GPUs, and CPU/DRAM where read; STP, ANTT and "
                       "energy vs the same rows run one after another, against their solo runs)")]
    workloads = report.workloads
    if workloads.empty:
        parts.append("(no co-located workloads)")
    else:
        parts.append(_view(workloads, WIDE_WORKLOAD_VIEW if wide else WORKLOAD_VIEW, wide, "workload"))
        if not wide:
            notes = [wrap(f"workload {w['workload']}: {w['note']}", first="    ", indent="      ")
                     for w in workloads.to_dict("records") if isinstance(w.get("note"), str) and w["note"]]
            parts += ["  notes:", *notes] if notes else []
    parts += ["", "Run-to-run variability (repeats of one configuration, per GPU model)",
              _view(report.variability, var_cols, wide, None)
              if not report.variability.empty else "(no configuration was run more than once)"]
    scripts = report.scripts
    if scripts is not None and not scripts.empty:
        own = [c for c in scripts.columns if c not in SCRIPT_VIEW and c not in report.runs.columns
               and c != "run_id"]
        parts += ["", "Runs the scripts made (their own metrics; hardware of each run's span)",
                  _view(scripts, SCRIPT_VIEW[:4] + own + SCRIPT_VIEW[4:], wide, "run_name")]
    cost = report.monitoring
    if cost is not None and not cost.empty:
        parts += ["", wrap("Monitoring cost (CPU-seconds of the listeners and of the launcher's storing, "
                           "% of one core over the run)"),
                  _view(cost, [c for c in cost.columns if c != "run_id"], wide,
                        "run_name" if "run_name" in cost else None)]
    nodes = report.nodes
    if nodes is not None and not nodes.empty:
        parts += ["", wrap("Multi-node runs (each node's part and all of them: status, exit code, "
                           "clock offset to node 0 and its error in ms; each node's figures are its "
                           "row in the per-run summary; docs/sheets.md, Multi-node rows)"),
                  _view(nodes, list(nodes.columns) if wide else NODE_VIEW, wide, "run_name")]
    energy = report.energy_parts
    if energy is not None and not energy.empty:
        parts += ["", wrap("Energy by part (J over each run's span: each device the run measured, in "
                           "energy_j; each power rail inside a device, never added to it)"),
                  _view(energy, [c for c in energy.columns if c != "run_id"], wide, "run_name")]
    parts += _checks(report.checks)
    return "\n".join(p for p in parts if p is not None)
