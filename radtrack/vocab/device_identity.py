"""Which physical device a run's ``<scope>`` (``gpu0``) was: read from whichever listener said so.

A listener that reads a device records what the device is as run tags of its own,
``radtrack.listener.<listener>.<scope>.<fact>`` (:data:`DEVICE_FACTS`: its UUID, model name,
the host's index of it, whether it is a MIG slice and of which GPU, since when it was
followed). Readers (co-location accounting, GPU labels, sharing, studies, the MIG wording of
a series) ask :func:`device_fact` and never name the listener: an NVIDIA GPU read by smi and
an AMD GPU read by amdsmi are found alike, and stores written before this module (smi's
tags, ``nvml_index``) read as they always did.

Pure: tags in, strings out. Tags may be bare (a run's) or ``tag.``-prefixed (a runs frame's row).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from radtrack.vocab import schema
from radtrack.vocab.declared import series_of

#: fact -> what it says; a listener writes ``radtrack.listener.<name>.<scope>.<fact>``
DEVICE_FACTS: dict[str, str] = {
    "uuid": "the device's unique id (NVML's GPU-/MIG- UUID, amdsmi's UUID): which physical device",
    "name": "its model as the vendor's library names it: picks the power sensor's measured constants",
    "index": "the host's index of the device (NVML's, amdsmi's): GPU labels and accounting's names",
    "mig": "'true' for a MIG slice: its power and energy are its parent GPU's",
    "parent_uuid": "a MIG slice's parent GPU's UUID: the device co-location accounting shares",
    "followed": "unix s since when a GPU outside the run's own was read (its tree turned out to use it)",
}
#: a fact also read under an older name (smi wrote the index as ``nvml_index``)
_ALIASES: dict[str, tuple[str, ...]] = {"index": ("index", "nvml_index")}
_PREFIX = "tag."
_FACT_TAG = re.compile(rf"^(?:{re.escape(_PREFIX)})?{re.escape(schema.LISTENER_TAG_PREFIX)}"
                       r"(?P<listener>[^.]+)\.(?P<scope>[^.]+)\.(?P<fact>[a-z_]+)$")


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):  # a runs frame's NaN
        return ""
    return str(value).strip()


def device_facts(tags: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """scope -> fact -> value, of every device any listener described in ``tags``. Where two
    listeners describe one scope, the first by listener name that gives a fact wins (they
    read one device: the same answer)."""
    found: dict[str, dict[str, str]] = {}
    names = {alias: fact for fact, aliases in _ALIASES.items() for alias in aliases}
    for key in sorted(str(k) for k in tags):
        m = _FACT_TAG.match(key)
        if m is None:
            continue
        fact = names.get(m["fact"], m["fact"])
        value = _text(tags[key])
        if fact in DEVICE_FACTS and value:
            found.setdefault(m["scope"], {}).setdefault(fact, value)
    return found


def device_fact(tags: Mapping[str, object], scope: str, fact: str) -> str | None:
    """What any listener said ``fact`` (:data:`DEVICE_FACTS`) of device ``scope`` is; None
    where none did."""
    if fact not in DEVICE_FACTS:
        raise ValueError(f"unknown device fact {fact!r}: one of {', '.join(DEVICE_FACTS)}")
    return device_facts(tags).get(scope, {}).get(fact)


def device_tag(listener: str, scope: str, fact: str) -> str:
    """The tag a listener writes a device's fact under: ``radtrack.listener.<listener>.<scope>.<fact>``."""
    if fact not in DEVICE_FACTS:
        raise ValueError(f"unknown device fact {fact!r}: one of {', '.join(DEVICE_FACTS)}")
    return schema.listener_tag(listener, scope, fact)


def reads_gpus(listener: str) -> bool:
    """Whether listener ``listener`` declares series of a GPU (a ``gpu<i>`` device): its
    state ``ok`` on a run says the run saw GPUs, whatever vendor's listener it is."""
    return any(s.scope in ("device", "device_share") and "/gpu<" in s.pattern
               for s in series_of(listener) or ())
