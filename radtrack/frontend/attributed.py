"""A co-located run's GPU power: the whole GPU's, or the run's attributed share.

A run that shared its GPU measured the whole GPU (``smi/gpu0/power_w``: every process on
it); co-location accounting (radtrack/postrun/accounting.py) stores the run's share as
``attribution/gpu0/attributed_power_w``. The chart's power toggle picks which one a power
subplot shows for such a run: ``attributed`` (the default) plots the share where the run
has it, and says so in the trace's name; ``gpu`` plots the measured GPU power. Runs without
accounting always show the GPU's power.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from radtrack.frontend.data import DataSource, Series
from radtrack.vocab import schema

POWER_MODES = ("attributed", "gpu")
DEFAULT_POWER = "attributed"
ATTRIBUTED_SUFFIX = " (attributed)"
_POWER = re.compile(r"^[a-z]+/(gpu\d+)/power_w$")


def attributed_key(row: Mapping[str, object], metric: str) -> str | None:
    """The run's attributed series standing in for GPU power ``metric``, if it has one."""
    found = _POWER.match(metric)
    if not found:
        return None
    key = schema.attribution_key(found.group(1), "attributed_power_w")
    value = row.get(f"metric.{key}")
    if value is None or (isinstance(value, float) and value != value):
        return None
    return key


def substitutions(rows: Sequence[Mapping[str, object]], metrics: Sequence[str],
                  power: str) -> dict[tuple[str, str], str]:
    """(run, metric) -> the key plotted instead, for the chart's power mode."""
    if power != "attributed":
        return {}
    out: dict[tuple[str, str], str] = {}
    for row in rows:
        for metric in metrics:
            key = attributed_key(row, metric)
            if key:
                out[(str(row["run_id"]), metric)] = key
    return out


def chart_series(source: DataSource, runs: list[str], metrics: list[str], power: str
                 ) -> tuple[dict[tuple[str, str], Series], set[tuple[str, str]]]:
    """The series a chart plots, each power subplot's co-located runs by their attributed
    share in ``attributed`` mode; and which (run, metric) pairs were substituted."""
    series = source.series(runs, metrics)
    powered = power == "attributed" and any(_POWER.match(m) for m in metrics)
    subs = substitutions(source.run_rows(runs), metrics, power) if runs and powered else {}
    if not subs:
        return series, set()
    extra = source.series(sorted({r for r, _ in subs}), sorted(set(subs.values())))
    series = dict(series)
    for (run_id, metric), key in subs.items():
        found = extra.get((run_id, key))
        if found is not None and len(found):
            series[(run_id, metric)] = found
    return series, {pair for pair in subs if len(extra.get((pair[0], subs[pair]), ())) > 0}


def any_attributed(rows: Sequence[Mapping[str, object]], metrics: Sequence[str]) -> bool:
    """Whether the power toggle changes anything for these runs and metrics."""
    return bool(substitutions(rows, metrics, "attributed"))
