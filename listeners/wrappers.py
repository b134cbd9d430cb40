"""The small contract of a command wrapper: a tool that runs the workload under itself.

A wrapper (``nsys``, ``ncu``: :mod:`radtrack.listeners.profilers`) samples nothing: the
launcher calls :meth:`CommandWrapper.wrap` on the workload's command line and runs what it
returns instead, records :meth:`CommandWrapper.tags` on the run and uploads the folder
``config.outdir`` (where :meth:`CommandWrapper.outputs` lie) under ``profiles/``. Wrappers
register in the listeners' entry-point group (``radtrack.listeners``), so ``-l ncu`` names
one like any listener; ``wraps_command`` tells the two kinds apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from radtrack.listeners.base import Availability, ListenerConfig


class CommandWrapper(ABC):
    """Base class: subclass, set ``name``, implement :meth:`wrap`."""

    name: ClassVar[str]
    #: the registry's users tell wrappers from sampling listeners by this flag
    wraps_command: ClassVar[bool] = True

    def __init__(self, config: ListenerConfig):
        self.config = config

    @classmethod
    def available(cls) -> Availability:
        """Whether the tool can run on this host, with a human reason when not."""
        return Availability(True)

    @abstractmethod
    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` under the tool."""

    def tags(self) -> dict[str, str]:
        """Run tags describing what it records (report name, range, ...)."""
        return {}

    def outputs(self) -> list[Path]:
        """The files the wrapped command leaves once it has finished (under ``config.outdir``)."""
        return []
