"""Units and labels of metric keys, for axis titles and hover.

What a key is (whose figure, in what unit) comes from one owner, radtrack/vocab/meaning.py:
the listener's own declaration where it made one (radtrack/listeners/base.py ``Listener.series``),
else the key's ``_<unit>`` suffix (``smi/gpu0/power_w`` is in watts); the script's own
metrics (``loss``) have none.
"""

from __future__ import annotations

import re

from radtrack.vocab.meaning import describe

_GPU = re.compile(r"/gpu\d+/")


def split_unit(key: str) -> tuple[str, str]:
    """(name, unit) of a key: ``top/proc/cpu_pct`` -> ('run CPU', '%')."""
    meaning = describe(key)
    return meaning.name, meaning.unit


def unit_of(key: str) -> str:
    """The bare unit (``%``, ``W``), '' for a number without one."""
    return describe(key).unit


def unit_text(key: str) -> str:
    """The unit as a reader needs it: ``% of one core`` where ``%`` alone would not say of what."""
    return describe(key).unit_text


def axis_title(key: str) -> str:
    """A y axis title: ``GPU power (W)``, ``run CPU (% of one core)``, ``loss``."""
    return describe(key).label


def gpu_family(key: str) -> str:
    """The key with its GPU index as ``gpu*`` (``smi/gpu*/power_w``): one subplot for every
    GPU's series of one quantity when GPUs are overlaid."""
    return _GPU.sub("/gpu*/", key)
