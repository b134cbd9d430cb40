"""A run's record (a row of analysis/data.py's runs frame) read by what its listeners declare:
its listener summaries (``metric.summary/<key>/<stat>``, an energy's ``metric.summary/<key>``)
with their meaning, and the host's core count, for radtrack/compute/result_checks.py: chosen
by role and scope, never by listener name."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.meaning import Meaning, describe

_METRIC = "metric."
_SUMMARY = _METRIC + schema.SUMMARY_PREFIX
#: the scopes of a GPU's (or a board's) own readings
DEVICE_SCOPES = ("device", "device_share")


@dataclass(frozen=True)
class Summary:
    """One finite summary of a listener's series on a run, by what the listener declares."""

    device: str  # the series' device (``gpu0``, ``power``, ``package0``)
    series: str  # the listener key it summarises (``smi/gpu0/power_w``)
    meaning: Meaning
    value: float


def summaries(record: Mapping[str, object]) -> list[Summary]:
    """The run's declared listener summaries (``metric.summary/<key>/<stat>``, an energy's
    ``metric.summary/<key>``), chosen by role and scope, never by listener name."""
    out = []
    for key, value in record.items():
        key = str(key)
        if not key.startswith(_SUMMARY) or not finite(value):
            continue
        m = describe(key[len(_METRIC):])
        if not m.declared or not m.stat:
            continue
        series = key[len(_SUMMARY):]
        series = series if m.stat == "total" else series.rsplit("/", 1)[0]
        out.append(Summary(es.device_of(series), series, m, number(value)))
    return out


def core_count(record: Mapping[str, object]) -> int:
    """The host's cores, as many as per-core busy-time series the run holds (0: unknown)."""
    keys = [str(k)[len(_METRIC):] for k, v in record.items()
            if str(k).startswith(_METRIC) and not str(k).startswith(_SUMMARY) and finite(v)]
    return len(es.cpu_time_keys(keys).cores)




def number(value: object) -> float:
    """A record's cell as a float; NaN for text, None or a missing cell."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def finite(value: object) -> bool:
    return math.isfinite(number(value))
