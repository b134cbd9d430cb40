"""What the Summary's and the Compare tab's columns mean, said in their headers.

``energy_j`` and ``gpu_energy_j`` sit side by side and differ exactly where co-location
matters: the first is the energy the run is charged (its attributed share of each GPU it
shared, the whole GPU's alone on it), the second what its GPUs used over its span,
whoever used them (radtrack/analysis/run_summaries.py, docs/analysis.md). Every other
figure's header gives its unit as a reader needs it (``cpu_pct_mean (% of all cores)``, the
host's; ``proc_cpu_pct_mean (% of one core)``, the run's) and its tooltip says whose figure
it is, from radtrack/store/meaning.py.
"""

from __future__ import annotations

from radtrack.store.meaning import describe

_KNOWN: dict[str, tuple[str, str]] = {
    "energy_j": ("energy_j · attributed (J)",
                 "Energy charged to the run: its attributed share of each GPU it shared "
                 "(and of the host's CPU and DRAM where read) "
                 "(co-location accounting), the whole GPU's energy for a run alone on it. "
                 "Blank where there is none to charge: no GPU power was recorded (a CPU-only "
                 "run, or no smi listener), or a co-located run has no co-location accounting"),
    "gpu_energy_j": ("gpu_energy_j · whole GPU (J)",
                     "Energy its GPUs used over the run's span, whoever used them (for a "
                     "co-located run this includes the other runs' share). Blank where no GPU "
                     "power was recorded (a CPU-only run, or no smi listener)"),
    "cpu_energy_j": ("cpu_energy_j · host CPU + DRAM (J)",
                     "Energy of the host's CPU packages and DRAM over the run's span (the rapl "
                     "listener's counters), whoever used them; part of energy_j (its share of it "
                     "for co-located runs), never of gpu_energy_j. Blank where not read"),
    "attribution": ("attribution", "How energy_j was split between co-located runs "
                                   "(docs/analysis.md#co-location-accounting)"),
    "co2e_g": ("co2e_g (g CO2e)", "Footprint of energy_j at the run's carbon intensity and PUE"),
    "duration_s": ("duration_s (s)", "The run's wall time"),
    "energy_j_ci95_pct": ("energy_j ± (95 %, %)",
                          "Half-width of energy_j's 95 % interval, in % of it: the power "
                          "sensor's error for this load and span (docs/analysis.md, energy "
                          "error bars)"),
    "energy_note": ("energy note", "Why energy_j's interval is over the threshold: a bursty "
                                   "load near the sensor's period, or a span too short"),
}


#: what the run's identity columns hold (no unit, no scope)
_IDENTITY: dict[str, str] = {
    "run": "The run's name (its MLflow run name), the physical GPU(s) it used and how it shared them",
    "run_name": "The run's MLflow run name",
    "workload": "The sheet's workload number: rows of one workload run at the same time",
    "letter": "The row's letter within its workload",
    "status": "The run's MLflow status",
    "file": "The script the row ran",
    "devices": "The GPUs the row asked for (the sheet's Devices cell)",
    "collocation": "How the row shared its GPU: '-' plain (time-slicing or CPU only), MPS, or a MIG profile",
    "experiment": "The MLflow experiment",
}


def column_title(column: str) -> str:
    """The header: the column's name, what it is for energy, and its unit."""
    if column in _KNOWN:
        return _KNOWN[column][0]
    if column in _IDENTITY:
        return column
    unit = describe(column).unit_text
    return f"{column} ({unit})" if unit else column


def column_help(column: str) -> str:
    """The header's tooltip: what the figure is, whose (its scope) and in what unit."""
    if column in _IDENTITY:
        return _IDENTITY[column]
    meaning = describe(column)
    said = f"{meaning.label}; scope: {meaning.scope_text}"
    if column in _KNOWN:
        return f"{_KNOWN[column][1]} ({said})"
    if column.startswith("energy_per_"):
        return f"energy_j (attributed) per unit of the script's work ({said})"
    if not meaning.declared:
        return f"{said}; the script's own figure, or one no listener describes"
    return said
