"""What the Summary's and the Compare tab's columns mean, said in their headers.

Every figure's name, scope and unit come from one owner, radtrack/vocab/meaning.py
(``column_meaning``), the same words the report's files and ``radtrack export`` carry in
their columns tables: a header is the column's own name and its unit as a reader needs it
(``cpu_pct_mean (% of all cores)``, the host's; ``proc_cpu_pct_mean (% of one core)``, the
run's; ``energy_j (J)``), the long name is its tooltip, with its scope. The page adds only
why a figure may be blank: ``energy_j`` and ``gpu_energy_j`` sit side by side and differ
exactly where co-location matters (radtrack/analysis/run_summaries.py, docs/analysis.md).
"""

from __future__ import annotations

from radtrack.vocab.meaning import Meaning, column_meaning

#: the report's table the page's Summary and Compare show: one row per run
TABLE = "runs"

#: the page's notes on when a figure is blank, after the owner's words in a tooltip
_NOTES: dict[str, str] = {
    "energy_j": "Its attributed share of each GPU it shared (co-location accounting), the whole "
                "GPU's energy for a run alone on it. Blank where there is none to charge: no GPU "
                "power was recorded (a CPU-only run, or no smi listener), or a co-located run has "
                "no co-location accounting",
    "gpu_energy_j": "Whoever used them: for a co-located run this includes the other runs' "
                    "share. Blank where no GPU power was recorded (a CPU-only run, or no smi "
                    "listener)",
    "cpu_energy_j": "The rapl listener's counters; part of energy_j (its share of it for "
                    "co-located runs), never of gpu_energy_j. Blank where not read",
    "attribution": "docs/analysis.md#co-location-accounting",
    "energy_j_ci95_pct": "The power sensor's error for this load and span (docs/analysis.md, "
                         "energy error bars)",
}

#: the page's own column: the run's label, as its legend names it (figures.legend_labels)
_RUN = "The run's name (its MLflow run name), the physical GPU(s) it used and how it shared them"


def meaning(column: str, table: str = TABLE) -> Meaning:
    """The owner's word on one column of the page's per-run tables (or of its ``table``:
    the Energy shares tab's is ``shares``)."""
    return column_meaning(column, table)


def column_title(column: str, table: str = TABLE) -> str:
    """The header: the column's name and its unit as the owner gives it."""
    unit = meaning(column, table).unit_text
    return f"{column} ({unit})" if unit else column


def column_help(column: str, table: str = TABLE) -> str:
    """The header's tooltip: what the figure is (the owner's long name, with its unit), whose
    (its scope), and the page's note on when it is blank."""
    if column == "run":
        return _RUN
    said = meaning(column, table)
    text = f"{said.label}; scope: {said.scope_text}"
    if table != TABLE:
        return text
    if column in _NOTES:
        return f"{text}. {_NOTES[column]}"
    if column.startswith("energy_per_"):
        return f"{text}; energy_j (attributed) per unit of the script's work"
    if not said.declared:
        return f"{text}; the script's own figure, or one no listener describes"
    return text
