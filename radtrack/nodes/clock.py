"""A node's clock against node 0's, measured NTP's way over the rendezvous (rendezvous.py)."""

from __future__ import annotations

from dataclasses import dataclass

CLOCK_ROUNDS = 8  # exchanges at a node's join; the shortest round trip counts


@dataclass(frozen=True)
class Clock:
    """A node's clock against the master's: master time = node time + ``offset_s``, within
    ``error_s`` (half the best round trip: NTP's bound for one exchange)."""

    offset_s: float
    error_s: float


def clock_from(rounds: list[tuple[float, float, float, float]]) -> Clock:
    """NTP's estimate from (t1 node send, t2 master receive, t3 master send, t4 node receive)
    exchanges: the one with the shortest round trip (least queueing) gives the offset."""
    if not rounds:
        raise ValueError("no clock exchange")
    best = min(rounds, key=lambda r: (r[3] - r[0]) - (r[2] - r[1]))
    t1, t2, t3, t4 = best
    delay = max(0.0, (t4 - t1) - (t3 - t2))
    return Clock(((t2 - t1) + (t3 - t4)) / 2, delay / 2)
