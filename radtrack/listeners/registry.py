"""Find listeners through the ``radtrack.listeners`` entry-point group.

Built-in and third-party listeners register the same way; one that fails to import is
a warning, never a crash. The lookup (radtrack's own metadata first, every installed
package's only for a name radtrack does not register) and the loading are the vocabulary's
(radtrack/vocab/declared.py, which reads what a listener declares through the same entry
points); here each loaded class is checked to be a listener and said to be broken once.
"""

from __future__ import annotations

import warnings
from functools import cache

from radtrack.errors import RadtrackError
from radtrack.listeners.base import Availability, Listener
from radtrack.listeners.protocol import ALIASES, ListenerChoice, canonical, parse_choices
from radtrack.listeners.wrappers import CommandWrapper
from radtrack.vocab import declared
from radtrack.vocab.declared import DIST, GROUP

#: what the entry-point group registers: a sampling listener or a command wrapper (nsys, ncu)
Plugin = type[Listener] | type[CommandWrapper]

__all__ = ["ALIASES", "DIST", "GROUP", "Plugin", "availability", "canonical", "default_names", "get",
           "installed", "parse_names", "sampling_names", "split", "unknown"]


@cache
def _load(name: str) -> Plugin | Exception:
    """The class of one registered listener, or the exception that stopped its import (or
    says it is no listener), warned of once."""
    ep = declared.entry_point(name)
    cls = declared.load(name)  # a broken plugin must not take radtrack down: its exception
    if not isinstance(cls, Exception) and not (isinstance(cls, type)
                                               and issubclass(cls, Listener | CommandWrapper)):
        cls = TypeError(f"{ep.value} is not a radtrack Listener (or CommandWrapper) subclass")
    if isinstance(cls, Exception):
        warnings.warn(f"listener {ep.name!r} ({ep.value}) failed to load: {cls}", stacklevel=2)
    return cls


def installed() -> dict[str, Plugin | Exception]:
    """Every registered listener name -> its class, or the exception that stopped its import."""
    return {name: _load(name) for name in declared.registered()}


def get(name: str) -> Plugin:
    """The listener class registered under ``name`` (aliases accepted)."""
    key = canonical(name)
    if not declared.known(key):
        raise RadtrackError(f"unknown listener {name!r}; installed: "
                            f"{', '.join(sorted(declared.registered()))}")
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
    return [n for n in names if not declared.known(canonical(ListenerChoice.parse(n).name))]


def sampling_names() -> list[str]:
    """Every installed sampling listener that loads, whether or not this host can run it
    (profilers, which wrap the command, are opt-in)."""
    return [name for name, cls in sorted(installed().items())
            if not isinstance(cls, Exception) and not cls.wraps_command]


def default_names() -> list[str]:
    """Every installed sampling listener available on this host (profilers are opt-in)."""
    return [name for name in sampling_names() if availability(name)]
