"""The small contract of a command wrapper: a tool that runs the workload under itself.

A wrapper (``nsys``, ``ncu``: :mod:`radtrack.listeners.profilers`) samples nothing: the
launcher calls :meth:`CommandWrapper.wrap` on the workload's command line and runs what it
returns instead, records :meth:`CommandWrapper.tags` on the run and uploads the folder
``config.outdir`` (where :meth:`CommandWrapper.outputs` lie) under ``profiles/``. Wrappers
register in the listeners' entry-point group (``radtrack.listeners``), so ``-l ncu`` names
one like any listener; ``wraps_command`` tells the two kinds apart.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import ClassVar

from radtrack.listeners.base import Plugin


class CommandWrapper(Plugin):
    """Base class: subclass, set ``name``, implement :meth:`wrap`."""

    wraps_command: ClassVar[bool] = True

    @abstractmethod
    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` under the tool."""

    def tags(self) -> dict[str, str]:
        """Run tags describing what it records (report name, range, ...)."""
        return {}

    def outputs(self) -> list[Path]:
        """The files the wrapped command leaves once it has finished (under ``config.outdir``)."""
        return []
