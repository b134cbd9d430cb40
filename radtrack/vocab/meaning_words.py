"""The words of radtrack's own figures (besides the listeners', which their listeners declare):
the tables radtrack/vocab/meaning.py's :func:`~radtrack.vocab.meaning.describe` answers from.

Data only, read through meaning.py (the one owner every reader asks): summary columns, the
report's own columns (slowdown, STP, a run's identity), co-location accounting, workload
totals, code windows and the cost of watching. A figure has one name everywhere: the
report's text, its csv/json/parquet files, ``radtrack export`` and the page print these
names as they are, and say their scope, unit and meaning from here.
"""

from __future__ import annotations

#: a tuple of words: (scope, unit, role, name, unit text); scope is one of
#: vocab.series.SCOPES, role one of ROLES
Words = tuple[str, str, str, str, str]

#: summary and report columns (compute/summary.py, run_summaries.py) -> what they are
#: (scope, unit, role, name, unit text): each a quantity of whichever listener's series
#: declares its role and scope (compute/summary.py QUANTITIES selects them), never one
#: listener's key; a column <quantity>_<stat> is <quantity>'s stat
SUMMARY_COLUMNS: dict[str, tuple[str, str, str, str, str]] = {
    "power_w": ("device", "W", "device_power", "GPU power", "W"),
    "gpu_util_pct": ("device", "%", "utilisation", "GPU utilisation", "% of time a kernel ran"),
    "sm_active_pct": ("device", "%", "utilisation", "GPU SM active", "% of SM cycles"),
    "tensor_active_pct": ("device", "%", "utilisation", "GPU tensor pipes active", "% of SM cycles"),
    "mem_used_mib": ("device", "MiB", "memory", "GPU memory used, all processes", "MiB"),
    "temp_c": ("device", "°C", "temperature", "GPU temperature", "°C"),
    "sm_clock_mhz": ("device", "MHz", "clock", "GPU SM clock", "MHz"),
    "proc_sm_util_pct": ("device_share", "%", "proc_share", "run's GPU SM share", "% of the GPU's SM time"),
    "proc_mem_used_mib": ("device_share", "MiB", "memory", "run's GPU memory", "MiB"),
    "cpu_pct": ("host", "%", "host_cpu", "host CPU", "% of all cores"),
    "proc_cpu_pct": ("run", "%", "proc_cpu", "run CPU", "% of one core"),
    "rss_mib": ("run", "MiB", "memory", "run memory (RSS)", "MiB"),
    # radtrack's own figures
    "duration_s": ("run", "s", "other", "run duration", "s"),
    "energy_j": ("device_share", "J", "energy", "run's energy (GPUs + host CPU/DRAM where read), attributed",
                 "J"),
    "gpu_energy_j": ("device", "J", "energy", "GPU energy over the run's span", "J"),
    "cpu_energy_j": ("host", "J", "energy", "host CPU and DRAM energy over the run's span", "J"),
    "co2e_g": ("run", "g", "other", "run footprint", "g CO2e"),
    "activity_energy_j": ("device", "J", "energy", "GPU energy, activity model", "J"),
    "energy_note": ("run", "", "other", "why the energy's interval is wide", ""),
    "attribution": ("run", "", "other", "how the energy was split", ""),
    "samples": ("run", "", "other", "readings in the run's span, fewest of its hardware series",
                "readings"),
}
#: summary/workload/<key> on a co-located workload's parent run (postrun/accounting.py)
WORKLOAD: dict[str, tuple[str, str, str, str]] = {  # key -> (unit, role, name, unit text)
    "energy_j": ("J", "energy", "workload energy (GPUs + host CPU/DRAM where read)", "J"),
    "idle_energy_j": ("J", "energy", "workload GPU idle energy", "J"),
    "other_energy_j": ("J", "energy", "GPU energy of processes outside the workload", "J"),
    "duration_s": ("s", "other", "workload duration", "s"),
    "co2e_g": ("g", "other", "workload footprint", "g CO2e"),
    "stp": ("", "other", "workload system throughput (STP)", "solo runs' worth"),
    "antt": ("", "other", "workload average normalised turnaround (ANTT)", "x solo time"),
    "serial_energy_j": ("J", "energy", "energy of the same work run solo, one after another", "J"),
    "energy_vs_serial_pct": ("%", "other", "workload energy vs serial", "% of the serial energy"),
    "stp_lo": ("", "other", "workload STP, 95 % interval's low end (from repeats)", "solo runs' worth"),
    "stp_hi": ("", "other", "workload STP, 95 % interval's high end (from repeats)", "solo runs' worth"),
    "antt_lo": ("", "other", "workload ANTT, 95 % interval's low end (from repeats)", "x solo time"),
    "antt_hi": ("", "other", "workload ANTT, 95 % interval's high end (from repeats)", "x solo time"),
    "energy_vs_serial_pct_lo": ("%", "other", "workload energy vs serial, 95 % interval's low end",
                                "% of the serial energy"),
    "energy_vs_serial_pct_hi": ("%", "other", "workload energy vs serial, 95 % interval's high end",
                                "% of the serial energy"),
}
#: attribution/<scope>/<key> series and summary/attribution/<scope>/<key> totals
ATTRIBUTION: dict[str, tuple[str, str, str, str, str]] = {  # -> (scope, unit, role, name, text)
    "attributed_power_w": ("device_share", "W", "attributed_power", "run's share of GPU power", "W"),
    "sm_share_pct": ("device_share", "%", "proc_share", "run's share of GPU SM time", "% of the whole GPU"),
    "idle_power_w": ("device", "W", "attributed_power", "GPU idle power, no run's", "W"),
    "other_power_w": ("device", "W", "attributed_power", "GPU power of processes outside the workload", "W"),
    "energy_j": ("device_share", "J", "energy", "run's GPU energy, attributed", "J"),
}
#: window/<name>/<key>: a code window's figures (postrun/window_energy.py)
WINDOW: dict[str, tuple[str, str, str, str, str]] = {
    "duration_s": ("run", "s", "other", "duration", "s"),
    "below_resolution_flag": ("run", "0/1", "other", "shorter than the power sensor resolves", "0/1"),
    "energy_j": ("device_share", "J", "energy", "run's energy (GPUs + host CPU/DRAM where read), attributed",
                 "J"),
    "gpu_energy_j": ("device", "J", "energy", "GPU energy", "J"),
    "cpu_energy_j": ("host", "J", "energy", "host CPU and DRAM energy", "J"),
    "power_w": ("device", "W", "device_power", "GPU power, mean", "W"),
    "gpu_util_pct": ("device", "%", "utilisation", "GPU utilisation, mean", "% of time a kernel ran"),
    "sm_active_pct": ("device", "%", "utilisation", "GPU SM active, mean", "% of SM cycles"),
    "activity_energy_j": ("device", "J", "energy", "GPU energy, activity model", "J"),
}
#: summary/monitoring/<key>: what watching the run cost (run/cost.py)
MONITORING: dict[str, tuple[str, str, str]] = {  # -> (unit, name, unit text)
    "listeners_cpu_s": ("s", "monitoring: listeners' CPU time", "CPU s"),
    "store_cpu_s": ("s", "monitoring: storing's CPU time", "CPU s"),
    "launcher_cpu_s": ("s", "monitoring: the launcher process's CPU time", "CPU s"),
    "cpu_pct": ("%", "monitoring CPU over the run", "% of one core"),
    "points": ("", "monitoring: points stored", ""),
    "spool_bytes": ("B", "monitoring: spool size", "B"),
    "missed": ("", "monitoring: sampling deadlines missed", ""),
    "cpu_s": ("s", "monitoring: <listener>'s CPU time", "CPU s"),
    "samples": ("", "monitoring: <listener>'s samples", ""),
}

#: the report's own columns (radtrack/analysis/report*.py, interference.py, colocation.py,
#: variability.py, result_checks.py, monitoring_cost.py, energy_parts.py, node_figures.py):
#: what a reader of any of its formats is told each one is
REPORT_COLUMNS: dict[str, Words] = {
    # who and what: a run's identity
    "run_id": ("run", "", "other", "MLflow run id", ""),
    "run_name": ("run", "", "other", "run name (<experiment>-<workload> <letter>)", ""),
    "experiment": ("run", "", "other", "experiment", ""),
    "start_time": ("run", "", "other", "start time (UTC)", ""),
    "user": ("run", "", "other", "who launched it (MLflow's mlflow.user tag)", ""),
    "launch": ("run", "", "other", "launch id: rows started by one radtrack command", ""),
    "gpu_used": ("run", "", "other", "the physical GPU(s) the run used", ""),
    "workload": ("workload", "", "other", "workload number in the sheet", ""),
    "letter": ("run", "", "other", "row letter within its workload", ""),
    "status": ("run", "", "other", "MLflow status", ""),
    "file": ("run", "", "other", "the script", ""),
    "params": ("run", "", "other", "the script's arguments", ""),
    "devices": ("run", "", "other", "the sheet's Devices cell (GPU indices)", ""),
    "collocation": ("run", "", "other", "the sheet's Collocation cell (-, mps, a MIG profile)", ""),
    "sharing": ("run", "", "other", "what the run shared (solo, GPU time-slicing / own GPU, host shared / "
                "CPU only, shared / MPS with N other runs, MIG slice), in the page's words", ""),
    "node": ("host", "", "other", "node of a multi-node run ('all': the run over every node)", ""),
    "host": ("host", "", "other", "the node's host", ""),
    "checks": ("run", "", "other", "codes of the checks that flag this run (the checks table)", ""),
    "row_run_name": ("run", "", "other", "the sheet row's run this script run belongs to", ""),
    "script_experiment": ("run", "", "other", "experiment the script logged its own run in", ""),
    # interference against solo runs (compute/interference.py)
    "solo_run_ids": ("run", "", "other", "the solo runs measured against (run ids)", ""),
    "solo_runs": ("run", "", "other", "the solo runs measured against", ""),
    "baseline_experiment": ("run", "", "other", "experiment the solo runs came from", ""),
    "baseline_rule": ("run", "", "other", "how the solo runs were found (docs/analysis.md)", ""),
    "baseline_mismatch": ("run", "", "other", "what differs between the run and its solo runs", ""),
    "slowdown": ("run", "", "other", "solo rate / co-located rate (or span / solo span), "
                 "1 = no interference", "x solo"),
    "slowdown_lo": ("run", "", "other", "slowdown, 95 % interval's low end (from repeats)", "x solo"),
    "slowdown_hi": ("run", "", "other", "slowdown, 95 % interval's high end (from repeats)", "x solo"),
    "slowdown_basis": ("run", "", "other", "what the slowdown compares (throughput or span)", ""),
    "solo_duration_s": ("run", "s", "other", "the solo runs' mean duration", "s"),
    "throughput": ("run", "", "other", "the run's throughput, mean", "units of work/s"),
    "solo_throughput": ("run", "", "other", "the solo runs' throughput, mean", "units of work/s"),
    "work_unit": ("run", "", "other", "unit of the script's work (samples, tokens, ...)", ""),
    "energy_per_unit_j": ("run", "J", "energy", "energy per unit of the script's work", "J/unit"),
    "solo_energy_per_unit_j": ("run", "J", "energy", "the solo runs' energy per unit of work", "J/unit"),
    "energy_per_unit_change_pct": ("run", "%", "other", "energy per unit of work vs solo",
                                   "% change"),
    "energy_per_unit_change_pct_lo": ("run", "%", "other", "energy per unit vs solo, 95 % interval's "
                                      "low end (from repeats)", "% change"),
    "energy_per_unit_change_pct_hi": ("run", "%", "other", "energy per unit vs solo, 95 % interval's "
                                      "high end (from repeats)", "% change"),
    "interval_df": ("run", "", "other", "degrees of freedom of the 95 % intervals (repeats - 1, "
                    "summed)", "repeats"),
    "interval_note": ("run", "", "other", "why a figure has no 95 % interval (no repeats: how to "
                      "declare them)", ""),
    "note": ("run", "", "other", "why a figure is missing or uncertain", ""),
    # co-located workloads (compute/colocation.py)
    "rows": ("workload", "", "other", "rows in the workload", "rows"),
    "work": ("workload", "", "other", "the workload's work (sum of its rows')", "units of work"),
    "stp": ("workload", "", "other", "system throughput (STP): sum of 1/slowdown", "solo runs' worth"),
    "antt": ("workload", "", "other", "average normalised turnaround (ANTT): mean slowdown", "x solo time"),
    "stp_lo": ("workload", "", "other", "STP, 95 % interval's low end (from repeats)", "solo runs' worth"),
    "stp_hi": ("workload", "", "other", "STP, 95 % interval's high end (from repeats)", "solo runs' worth"),
    "antt_lo": ("workload", "", "other", "ANTT, 95 % interval's low end (from repeats)", "x solo time"),
    "antt_hi": ("workload", "", "other", "ANTT, 95 % interval's high end (from repeats)", "x solo time"),
    "energy_vs_serial_pct_lo": ("workload", "%", "other", "energy vs serial, 95 % interval's low end "
                                "(from repeats)", "% of the serial energy"),
    "energy_vs_serial_pct_hi": ("workload", "%", "other", "energy vs serial, 95 % interval's high end "
                                "(from repeats)", "% of the serial energy"),
    "idle_energy_j": ("workload", "J", "energy", "GPU idle energy, no run's", "J"),
    "other_energy_j": ("workload", "J", "energy", "GPU energy of processes outside the workload", "J"),
    "serial_energy_j": ("workload", "J", "energy", "energy of the same rows run solo one after another", "J"),
    "energy_vs_serial_pct": ("workload", "%", "other", "workload energy vs serial_energy_j",
                             "% of the serial energy"),
    # the attribution study (analysis/studies/attribution.py)
    "method": ("run", "", "other", "the split of the shared device's energy (radtrack.attribution.<device> tags)",
               ""),
    "run_names": ("run", "", "other", "the identical co-located rows (twins)", ""),
    "energies_j": ("run", "", "other", "the twins' attributed energies, in J", ""),
    "energy_spread_pct": ("run", "%", "other", "twins' attributed energy spread: (max - min) / mean",
                          "% of the mean"),
    "work_spread_pct": ("run", "%", "other", "twins' work spread: (max - min) / mean", "% of the mean"),
    "energy_per_unit_spread_pct": ("run", "%", "other", "twins' energy per unit spread: (max - min) / mean",
                                   "% of the mean"),
    # run-to-run variability (compute/variability.py)
    "rows_in_workload": ("workload", "", "other", "rows that ran side by side in each repeat", "rows"),
    "gpu": ("device", "", "other", "GPU model", ""),
    "n": ("run", "", "other", "repeats of the configuration", "runs"),
    "run_ids": ("run", "", "other", "the repeats' run ids", ""),
    # checks (compute/result_checks.py)
    "figure": ("run", "", "other", "the column a check is about ('*': the whole run)", ""),
    "check": ("run", "", "other", "the check's code", ""),
    "why": ("run", "", "other", "why the figure cannot be trusted as it stands", ""),
    "todo": ("run", "", "other", "what to do about it", ""),
    # what watching cost (analysis/monitoring_cost.py), per-listener columns <listener>_cpu_s
    "listeners_cpu_s": ("run", "s", "other", "monitoring: listeners' CPU time", "CPU s"),
    "store_cpu_s": ("run", "s", "other", "monitoring: storing's CPU time", "CPU s"),
    "cpu_pct_of_core": ("run", "%", "other", "monitoring CPU over the run", "% of one core"),
    "points": ("run", "", "other", "monitoring: points stored", "points"),
    "spool_bytes": ("run", "B", "other", "monitoring: spool size", "B"),
    "missed": ("run", "", "other", "monitoring: sampling deadlines missed", "deadlines"),
    # energy by part (analysis/energy_parts.py)
    "part": ("device", "", "other", "a device or power rail the run measured", ""),
    "scope": ("run", "", "other", "whose figure: host, run, device, ...", ""),
    "in_energy_j": ("run", "", "other", "whether the part is added into energy_j", ""),
    # the page's Energy shares table (radtrack/frontend/shares.py): a workload's devices, party by party
    "party": ("device", "", "other", "whose share of the device's energy: a run, 'other' (processes "
              "outside the workload), 'idle', or 'total' (the device's measured energy)", ""),
    "share_of_device_pct": ("device_share", "%", "other", "the party's share of the device's measured energy",
                            "% of the device's energy"),
    # multi-node runs (analysis/node_figures.py)
    "exit_code": ("host", "", "other", "the node's exit code", ""),
    "clock_offset_ms": ("host", "ms", "other", "the node's clock offset to node 0", "ms"),
    "clock_error_ms": ("host", "ms", "other", "the clock offset's error", "ms"),
    # the run's own figures: the script's code windows (analysis/report_own.py)
    "window": ("run", "", "other", "code window name (run.window / begin_window)", ""),
    "count": ("run", "", "other", "times the window ran", "times"),
    "share_of_span_pct": ("run", "%", "other", "the windows' time, share of the run's span",
                          "% of the run's span"),
    "share_of_energy_pct": ("run", "%", "other", "the windows' energy, share of the run's energy_j",
                            "% of the run's energy"),
    "below_resolution": ("run", "", "other", "times the window was shorter than the power sensor "
                         "resolves (no energy figure)", "times"),
    # radtrack export's time grid (radtrack/export.py)
    "seconds": ("run", "s", "other", "run seconds at the step's start", "s"),
    "time": ("run", "", "other", "time of the step's start (UTC)", ""),
    "start_skew_ms": ("workload", "ms", "other", "spread of the workload's rows' starts", "ms"),
    "time_to_target_s": ("run", "s", "other", "time to reach --target", "s"),
    "time_to_target_step": ("run", "", "other", "step at which --target was reached", "step"),
}

#: figures that count things: printed and written as whole numbers
COUNTS = frozenset({"samples", "n", "rows", "rows_in_workload", "points", "missed", "spool_bytes",
                    "count", "below_resolution", "time_to_target_step", "exit_code", "interval_df"})

#: a run's params and tags as columns (radtrack export, the runs frames): ``param.<name>``
RUN_FIELDS = {"param.": "the run's parameter", "tag.": "the run's tag"}
#: tables of the scripts' own figures (analysis/report_own.py, report.py script_table)
OWN_TABLES = ("own_metrics", "scripts")
#: tables of a run's time steps (radtrack export): what a script's own metric is in each
STEP_TABLES = {"export": "the script's own metric, mean over the step"}
#: tables whose rows are parts of a run: what a figure of theirs is, and whose (scope)
TABLE_PARTS: dict[str, dict[str, tuple[str, str]]] = {
    "nodes": {"duration_s": ("the node's span ('all': the run's over every node)", "host"),
              "gpu_energy_j": ("the node's GPU energy ('all': every node's)", "device"),
              "co2e_g": ("the node's footprint ('all': every node's)", "host")},
    "energy_parts": {"energy_j": ("the part's energy over the run's span", "device")},
    "shares": {"energy_j": ("the party's energy on the device over the workload", "device_share")},
}
