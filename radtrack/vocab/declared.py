"""What a registered listener declares, found through the plugin interface.

Listeners, radtrack's own and third-party ones alike, register in the ``radtrack.listeners``
entry-point group. The vocabulary reads a listener's declared series (:func:`series_of`:
``Listener.series``, radtrack/vocab/series.py ``Series``) through that group, never by importing
radtrack.listeners, so that it stays the floor every room reads (docs/architecture.md
"Floors") and a plugin's declaration counts as a built-in's. radtrack/listeners/registry.py
builds the listener registry (the class check, availability, the names a run takes) on this
lookup and its cache: each entry point is loaded once per process.

A name radtrack itself registers is looked up in radtrack's own metadata (0.3 ms); every
installed package's is read (15 ms for 247 packages on the H100 host, before the scripts start)
only for a name radtrack does not register, or to list them all. A built-in name is radtrack's
listener, whatever else registers it.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from radtrack.vocab.series import Series

if TYPE_CHECKING:  # importlib.metadata (with email, zipfile, ...: 12-40 ms) only when looked up
    from importlib.metadata import EntryPoint

GROUP = "radtrack.listeners"
DIST = "radtrack"
#: other names a user may give a listener (the tool it stands for)
ALIASES = {"dcgmi": "dcgm", "nvidia-smi": "smi"}
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def canonical(name: str) -> str:
    """A listener name as registered: lower case, aliases resolved ('nvidia-smi' -> 'smi')."""
    name = name.strip().lower()
    return ALIASES.get(name, name)


@cache
def own() -> dict[str, EntryPoint]:
    """radtrack's own listeners -> their entry points, from its metadata alone."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution(DIST).entry_points
    except PackageNotFoundError:  # run from a tree that is not installed
        return {}
    return {ep.name: ep for ep in eps if ep.group == GROUP}


@cache
def registered() -> dict[str, EntryPoint]:
    """Every registered listener name -> its entry point (nothing imported yet); radtrack's
    own over another package's of the same name."""
    from importlib.metadata import entry_points

    return {**{ep.name: ep for ep in entry_points(group=GROUP)}, **own()}


def known(name: str) -> bool:
    """Whether a package registers ``name`` (registered as given: see :func:`canonical`)."""
    return name in own() or name in registered()  # every package read only when not own


def entry_point(name: str) -> EntryPoint:
    """The entry point registered under ``name`` (KeyError for a name none registers)."""
    return own().get(name) or registered()[name]


@cache
def load(name: str) -> object:
    """What the entry point ``name`` names, or the exception that stopped its import (a
    broken plugin must not take radtrack down). Only the listeners asked for are imported
    (the launcher imports them before its scripts start: each module it can skip starts
    them sooner)."""
    try:
        return entry_point(name).load()
    except Exception as exc:  # noqa: BLE001 - whatever a plugin's import raises
        return exc


@cache
def series_of(listener: str) -> tuple[Series, ...] | None:
    """The series the listener registered as ``listener`` (aliases accepted) declares: () for
    one that declares none or does not load (its keys are read from their shape); None for a
    name no package registers."""
    if not _NAME.fullmatch(listener):
        return None
    name = canonical(listener)
    if not known(name):
        return None
    cls = load(name)
    declared = getattr(cls, "series", ()) if isinstance(cls, type) else ()
    # a class that is no listener (a command wrapper declares nothing) describes no key
    if not isinstance(declared, tuple) or not all(isinstance(s, Series) for s in declared):
        return ()
    return declared
