"""The store's layout, in one place: tag names, metric key families, artifact paths.

Writers (the launcher, the sink, the end-of-run steps) and readers (analysis, frontend,
report) import their names from here; docs/architecture.md's tables are checked against
this module (tests/test_schema_docs.py).

Metric keys as stored in MLflow and as radtrack's readers name them:

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
SUMMARY_PREFIX = "summary/"

# -- tags -------------------------------------------------------------------------------
TAG_PREFIX = "radtrack."
ROLE = "radtrack.role"  # "workload" (parent) | "row" (child)
ROLE_WORKLOAD = "workload"
ROLE_ROW = "row"

# -- artifact paths (folders inside a run's artifact root) ------------------------------
TELEMETRY_DIR = "telemetry"  # <listener>.parquet trace + <listener>.json probe
LOGS_DIR = "logs"  # output.log
ENVIRONMENT_DIR = "environment"
PROFILES_DIR = "profiles"
PLACEMENT_DIR = "placement"  # on the parent
POWER_ARTIFACT = "attribution/power.parquet"  # on the parent


def summary_key(key: str, stat: str | None = None) -> str:
    """``summary/<key>`` (a total, e.g. an energy counter's delta) or ``summary/<key>/<stat>``."""
    return f"{SUMMARY_PREFIX}{key}" if stat is None else f"{SUMMARY_PREFIX}{key}/{stat}"


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
