"""The few exception types radtrack raises; each carries a message a user can act on."""

from __future__ import annotations


class RadtrackError(Exception):
    """Bad input or an unusable environment, detected before anything starts.

    The CLI prints the message on one line and exits with ``exit_code`` (2).
    """

    exit_code = 2


class SheetError(RadtrackError):
    """One or more problems in an experiment sheet; ``problems`` holds every one."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class PlacementError(RadtrackError):
    """GPU placement (MPS, MIG, clocks) could not be set up or was refused."""
