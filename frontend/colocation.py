"""What a run's label says besides its name: how it shared its GPU and which script it ran.

``solo``, ``time-shared with N`` (plain co-location: N other runs on its GPUs), ``MPS 50 %``
(``MPS`` without a limit, ``with N`` when others shared it), ``MIG 3g.40gb``: read from the
row's ``radtrack.collocation`` and ``radtrack.colocated_with`` tags (docs/architecture.md),
and the script's file name from its ``script`` param (or MLflow's source name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePath

from radtrack.store import schema

_MPS = re.compile(r"^mps(?::(\d+(?:\.\d+)?))?$", re.IGNORECASE)
_ABSENT = ("", "-", "none", "nan")


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def colocated_count(row: Mapping[str, object]) -> int:
    """How many other runs shared the run's GPUs (its ``radtrack.colocated_with`` names)."""
    others = _text(row.get(f"tag.{schema.COLOCATED_WITH}"))
    return len([n for n in others.split(",") if n.strip()])


def colocation_text(row: Mapping[str, object]) -> str:
    """``solo``, ``time-shared with 2``, ``MPS 50 % with 1``, ``MIG 3g.40gb``; '' for a run
    radtrack did not launch (no co-location recorded)."""
    mode = _text(row.get("collocation") or row.get(f"tag.{schema.COLLOCATION}"))
    others = colocated_count(row)
    mig = _text(row.get(f"tag.{schema.MIG_PROFILE}"))
    with_n = f" with {others}" if others else ""
    mps = _MPS.match(mode)
    if mps:
        share = f" {mps.group(1)} %" if mps.group(1) else ""
        return f"MPS{share}{with_n}"
    if mode.lower() not in _ABSENT:
        return f"MIG {mode}"
    if mig:
        return f"MIG {mig}"
    if others:
        return f"time-shared with {others}"
    if mode == "-" or row.get(f"tag.{schema.ROLE}") == schema.ROLE_ROW:
        return "solo"
    return ""


def script_text(row: Mapping[str, object]) -> str:
    """The script's file name (``sgemm.py``), or ''."""
    script = _text(row.get("file") or row.get("param.script")
                   or row.get("tag.mlflow.source.name"))
    if not script:
        return ""
    return PurePath(script.split()[0]).name or script


def description(row: Mapping[str, object]) -> str:
    """Co-location and script, as the legend and the basket show them after the run's name."""
    return " · ".join(part for part in (colocation_text(row), script_text(row)) if part)
