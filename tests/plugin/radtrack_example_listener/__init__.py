"""An example third-party radtrack listener: the host's 1, 5 and 15-minute load averages.

Installing this package registers ``loadavg`` in the ``radtrack.listeners`` entry-point
group; radtrack then runs it like a built-in (``python -m radtrack.listeners loadavg``).
"""

from __future__ import annotations

import os

from radtrack.listeners import Availability, Listener, MetricSpec

_WINDOWS = (1, 5, 15)


class LoadavgListener(Listener):
    name = "loadavg"

    @classmethod
    def available(cls) -> Availability:
        if not hasattr(os, "getloadavg"):
            return Availability(False, "os.getloadavg is not offered on this platform")
        return Availability(True)

    def probe(self) -> list[MetricSpec]:
        return [MetricSpec(f"loadavg/host/load{w}_count", "count",
                           f"runnable processes averaged over {w} min", "os.getloadavg")
                for w in _WINDOWS]

    def sample(self) -> dict[str, float]:
        return {f"loadavg/host/load{w}_count": v
                for w, v in zip(_WINDOWS, os.getloadavg(), strict=True)}
