"""Metric keys as stored in MLflow and as radtrack's readers name them.

Listeners emit, and Parquet traces and summaries use, ``<listener>/<scope>/<quantity>_<unit>``
(``smi/gpu0/power_w``). Where those series are stored as MLflow metrics they carry MLflow's
``system/`` prefix (``system/smi/gpu0/power_w``), so MLflow's own run page files them under
"System metrics" instead of among the model's curves. Stores written before that hold the
bare form. Readers (analysis, frontend, report) call :func:`canonical_key` on every key they
read from MLflow and :func:`stored_keys` to find a series again, so both forms read alike.
"""

from __future__ import annotations

from collections.abc import Iterable

SYSTEM_PREFIX = "system/"


def stored_key(key: str) -> str:
    """The MLflow metric key of a listener series: ``smi/gpu0/power_w`` -> ``system/smi/...``."""
    return key if key.startswith(SYSTEM_PREFIX) else SYSTEM_PREFIX + key


def canonical_key(key: str) -> str:
    """The reader's name of a stored key: ``system/smi/gpu0/power_w`` -> ``smi/gpu0/power_w``.

    Only a prefixed ``<listener>/...`` key loses the prefix; MLflow's own system metrics
    (``system/cpu_utilization_percentage``, no second '/') and every other key stay as they are.
    """
    if key.startswith(SYSTEM_PREFIX) and "/" in key[len(SYSTEM_PREFIX):]:
        return key[len(SYSTEM_PREFIX):]
    return key


def stored_keys(keys: Iterable[str]) -> dict[str, str]:
    """Canonical key -> the key as stored, for a run's stored metric keys; where a store holds
    both forms of one series (never written so by radtrack), the ``system/`` one wins."""
    out: dict[str, str] = {}
    for key in keys:
        name = canonical_key(key)
        if name not in out or key.startswith(SYSTEM_PREFIX):
            out[name] = key
    return out
