"""A spool whose disk is full: samples that cannot be written are counted, not lost silently.

The spool writes each listener line before anything else (radtrack/store/spool.py). When the
disk is full that write fails: the sample is dropped (a line that is not in the spool file is
never shipped, so the spool's line counts stay true), the launcher says so once, the script
runs on, and the next line that fits resumes spooling. The row run gets the tag
``radtrack.spool.dropped`` (how many, between when and when) and the metric
``radtrack/spool_dropped_samples`` (the running count, one point per second with drops).
"""

from __future__ import annotations

import logging
import threading
import time

from radtrack.vocab.schema import SPOOL_DROPPED_KEY, SPOOL_DROPPED_TAG

log = logging.getLogger(__name__)

_said = threading.Event()  # one "disk full" line per launcher, however many rows and episodes


class Drops:
    """Samples a spool could not write, and when."""

    def __init__(self, where: str):
        self.where = where
        self.count = 0
        self.first = self.last = 0.0
        self.points: list[tuple[float, int]] = []  # (unix s, running count), <= one a second
        self.full = False  # within an episode

    def dropped(self, samples: int, exc: OSError) -> None:
        now = time.time()
        self.count += samples
        self.first = self.first or now
        self.last = now
        if self.points and now - self.points[-1][0] < 1.0:
            self.points[-1] = (self.points[-1][0], self.count)
        else:
            self.points.append((now, self.count))
        if not self.full:
            self.full = True
            if not _said.is_set():
                _said.set()
                log.warning("radtrack: the spool's disk is full (%s: %s): samples are dropped and "
                            "counted until space returns; the scripts run on", self.where,
                            exc.strerror or exc)

    def resumed(self) -> None:
        if self.full:
            self.full = False
            log.warning("radtrack: spooling again in %s (%d sample(s) dropped so far)",
                        self.where, self.count)

    def tags(self) -> dict[str, str]:
        """The row run's tag, when samples were dropped."""
        if not self.count:
            return {}
        span = " and ".join(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
                            for t in (self.first, self.last))
        return {SPOOL_DROPPED_TAG: f"{self.count} sample(s) between {span} (spool disk full)"}

    def metrics(self) -> list[tuple[str, float, int, int]]:
        """(key, value, timestamp ms, step) points of the running count."""
        return [(SPOOL_DROPPED_KEY, float(n), int(t * 1000), i)
                for i, (t, n) in enumerate(self.points)]
