"""What a run's label says besides its name: what it shared and which script it ran.

``solo``, ``GPU time-slicing with N`` (plain co-location on a GPU the run's processes used:
N other runs beside it), ``CPU only, shared with N`` (co-located, but its processes never
used a GPU: they shared the host's CPUs), ``MPS 50 % with N`` (``MPS`` without a limit),
``MIG slice 3g.40gb``: radtrack/analysis/sharing.py's words, the report's ``sharing``
column's too; the script's file name from its ``script`` param (or MLflow's source name).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath

from radtrack.analysis.sharing import colocated_count, colocation_text, text_of, uses_gpu

__all__ = ["colocated_count", "colocation_text", "description", "script_text", "uses_gpu"]


def script_text(row: Mapping[str, object]) -> str:
    """The script's file name (``sgemm.py``), or ''."""
    script = text_of(row.get("file") or row.get("param.script")
                   or row.get("tag.mlflow.source.name"))
    if not script:
        return ""
    return PurePath(script.split()[0]).name or script


def description(row: Mapping[str, object]) -> str:
    """Co-location and script, as the legend and the basket show them after the run's name."""
    return " · ".join(part for part in (colocation_text(row), script_text(row)) if part)
