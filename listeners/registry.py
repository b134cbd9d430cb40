"""Find listeners through the ``radtrack.listeners`` entry-point group.

Built-in and third-party listeners register the same way; one that fails to import is
a warning, never a crash.
"""

from __future__ import annotations

import warnings
from functools import cache
from importlib.metadata import entry_points

from radtrack.errors import RadtrackError
from radtrack.listeners.base import Availability, Listener
from radtrack.listeners.protocol import ALIASES, ListenerChoice, canonical, parse_choices
from radtrack.listeners.wrappers import CommandWrapper

#: what the entry-point group registers: a sampling listener or a command wrapper (nsys, ncu)
Plugin = type[Listener] | type[CommandWrapper]

__all__ = ["ALIASES", "GROUP", "Plugin", "availability", "canonical", "default_names", "get", "installed",
           "parse_names", "split", "unknown"]

GROUP = "radtrack.listeners"


@cache
def installed() -> dict[str, Plugin | Exception]:
    """Every registered listener name -> its class, or the exception that stopped its import."""
    found: dict[str, Plugin | Exception] = {}
    for ep in entry_points(group=GROUP):
        try:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Listener | CommandWrapper)):
                raise TypeError(f"{ep.value} is not a radtrack Listener (or CommandWrapper) "
                                "subclass")
            found[ep.name] = cls
        except Exception as exc:  # a broken plugin must not take radtrack down
            warnings.warn(f"listener {ep.name!r} ({ep.value}) failed to load: {exc}", stacklevel=2)
            found[ep.name] = exc
    return found


def get(name: str) -> Plugin:
    """The listener class registered under ``name`` (aliases accepted)."""
    cls = installed().get(canonical(name))
    if cls is None:
        raise RadtrackError(f"unknown listener {name!r}; installed: {', '.join(sorted(installed()))}")
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
    return [n for n in names if ListenerChoice.parse(n).name not in installed()]


def default_names() -> list[str]:
    """Every installed sampling listener available on this host (profilers are opt-in)."""
    out = []
    for name, cls in sorted(installed().items()):
        if isinstance(cls, Exception) or cls.wraps_command:
            continue
        if availability(name):
            out.append(name)
    return out
