"""Find listeners through the ``radtrack.listeners`` entry-point group.

Built-in and third-party listeners register the same way; one that fails to import is
a warning, never a crash. A name radtrack itself registers is looked up in radtrack's own
metadata (0.3 ms); every installed package's is read (15 ms for 247 packages on the H100
host, before the scripts start) only for a name radtrack does not register, or to list
them all. A built-in name is radtrack's listener, whatever else registers it.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import TYPE_CHECKING

from radtrack.errors import RadtrackError
from radtrack.listeners.base import Availability, Listener
from radtrack.listeners.protocol import ALIASES, ListenerChoice, canonical, parse_choices
from radtrack.listeners.wrappers import CommandWrapper

if TYPE_CHECKING:  # importlib.metadata (with email, zipfile, ...: 12-40 ms) only when looked up
    from importlib.metadata import EntryPoint

#: what the entry-point group registers: a sampling listener or a command wrapper (nsys, ncu)
Plugin = type[Listener] | type[CommandWrapper]

__all__ = ["ALIASES", "GROUP", "Plugin", "availability", "canonical", "default_names", "get", "installed",
           "parse_names", "sampling_names", "split", "unknown"]

GROUP = "radtrack.listeners"
DIST = "radtrack"


@cache
def _own() -> dict[str, EntryPoint]:
    """radtrack's own listeners -> their entry points, from its metadata alone."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution(DIST).entry_points
    except PackageNotFoundError:  # run from a tree that is not installed
        return {}
    return {ep.name: ep for ep in eps if ep.group == GROUP}


@cache
def _registered() -> dict[str, EntryPoint]:
    """Every registered listener name -> its entry point (nothing imported yet); radtrack's
    own over another package's of the same name."""
    from importlib.metadata import entry_points

    return {**{ep.name: ep for ep in entry_points(group=GROUP)}, **_own()}


def _known(name: str) -> bool:
    return name in _own() or name in _registered()  # every package read only when not own


@cache
def _load(name: str) -> Plugin | Exception:
    """The class of one registered listener, or the exception that stopped its import. Only
    the listeners a run names are imported (the launcher imports them before its scripts
    start: each module it can skip starts them sooner)."""
    ep = _own().get(name) or _registered()[name]
    try:
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, Listener | CommandWrapper)):
            raise TypeError(f"{ep.value} is not a radtrack Listener (or CommandWrapper) subclass")
        return cls
    except Exception as exc:  # a broken plugin must not take radtrack down
        warnings.warn(f"listener {ep.name!r} ({ep.value}) failed to load: {exc}", stacklevel=2)
        return exc


def installed() -> dict[str, Plugin | Exception]:
    """Every registered listener name -> its class, or the exception that stopped its import."""
    return {name: _load(name) for name in _registered()}


def get(name: str) -> Plugin:
    """The listener class registered under ``name`` (aliases accepted)."""
    key = canonical(name)
    if not _known(key):
        raise RadtrackError(f"unknown listener {name!r}; installed: {', '.join(sorted(_registered()))}")
    cls = _load(key)
    if isinstance(cls, Exception):
        raise RadtrackError(f"listener {name!r} failed to load: {cls}")
    return cls


@cache
def availability(name: str) -> Availability:
    try:
        return get(name).available()
    except RadtrackError as exc:
        return Availability(False, str(exc))
    except Exception as exc:  # available() itself must not crash the launcher
        return Availability(False, f"availability check failed: {exc}")


def split(entry: str) -> ListenerChoice:
    """'dcgm@0.5' -> ('dcgm', 0.5): a listener with its own interval; 'smi' -> ('smi', None)
    (:meth:`ListenerChoice.parse`)."""
    return ListenerChoice.parse(entry)


def parse_names(text: str | None) -> list[str] | None:
    """'smi+top' -> ['smi', 'top']; 'smi+dcgm@1' -> ['smi', 'dcgm@1'] (dcgm every second
    whatever the run's interval); 'none' -> []; None/'' -> None (= every available one).
    RadtrackError names a malformed entry, an empty name ('smi++top') included
    (:func:`radtrack.listeners.protocol.parse_choices`)."""
    choices = parse_choices(text)
    return None if choices is None else [c.format() for c in choices]


def unknown(names: list[str]) -> list[str]:
    return [n for n in names if not _known(canonical(ListenerChoice.parse(n).name))]


def sampling_names() -> list[str]:
    """Every installed sampling listener that loads, whether or not this host can run it
    (profilers, which wrap the command, are opt-in)."""
    return [name for name, cls in sorted(installed().items())
            if not isinstance(cls, Exception) and not cls.wraps_command]


def default_names() -> list[str]:
    """Every installed sampling listener available on this host (profilers are opt-in)."""
    return [name for name in sampling_names() if availability(name)]
