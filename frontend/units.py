"""Units of metric keys, for axis titles and hover.

Listeners name every series ``<listener>/<scope>/<quantity>_<unit>`` (listeners/base.py's
MetricSpec: ``smi/gpu0/power_w`` is in watts), so the unit is read from the key's suffix;
the script's own metrics (``loss``) have none.
"""

from __future__ import annotations

import re

# longest suffix first: "_bytes_per_s" before "_per_s", "_mib" before "_b"
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_bytes_per_s", "B/s"), ("_samples_per_s", "samples/s"), ("_tokens_per_s", "tokens/s"),
    ("_per_s", "/s"), ("_pct", "%"), ("_w", "W"), ("_mw", "mW"), ("_j", "J"), ("_wh", "Wh"),
    ("_kwh", "kWh"), ("_mib", "MiB"), ("_gib", "GiB"), ("_kib", "KiB"), ("_bytes", "B"),
    ("_mhz", "MHz"), ("_c", "°C"), ("_s", "s"), ("_ms", "ms"), ("_us", "µs"), ("_rpm", "rpm"),
    ("_v", "V"), ("_g", "g"), ("_count", ""),
)
_GPU = re.compile(r"/gpu\d+/")


def split_unit(key: str) -> tuple[str, str]:
    """(quantity, unit) of a key's last part: ``power_w`` -> ('power', 'W')."""
    last = key.rsplit("/", 1)[-1]
    for suffix, unit in sorted(_SUFFIXES, key=lambda s: -len(s[0])):
        if last.endswith(suffix) and len(last) > len(suffix):
            return last[: -len(suffix)], unit
    return last, ""


def unit_of(key: str) -> str:
    return split_unit(key)[1]


def axis_title(key: str) -> str:
    """A y axis title: ``power (W)``, ``gpu util (%)``, ``loss``."""
    quantity, unit = split_unit(key)
    quantity = quantity.replace("_", " ")
    return f"{quantity} ({unit})" if unit else quantity


def gpu_family(key: str) -> str:
    """The key with its GPU index as ``gpu*`` (``smi/gpu*/power_w``): one subplot for every
    GPU's series of one quantity when GPUs are overlaid."""
    return _GPU.sub("/gpu*/", key)
