"""An example third-party radtrack listener: the host's 1, 5 and 15-minute load averages.

Installing this package registers ``loadavg`` in the ``radtrack.listeners`` entry-point
group; radtrack then runs it like a built-in (``python -m radtrack.listeners loadavg``).
Its ``series`` say what each key is (role, scope, unit, label), so radtrack's page, report
and export label them without running it (``radtrack.vocab.meaning.describe``).
"""

from __future__ import annotations

import os

from radtrack.listeners import Availability, Listener, MetricSpec, Series

_WINDOWS = (1, 5, 15)


class LoadavgListener(Listener):
    name = "loadavg"
    series = (Series("loadavg/host/load<minutes>_count", "count", role="other", scope="host",
                     label="host load average, <minutes> min", unit_text="runnable processes",
                     source="os.getloadavg"),)

    @classmethod
    def available(cls) -> Availability:
        if not hasattr(os, "getloadavg"):
            return Availability(False, "os.getloadavg is not offered on this platform")
        return Availability(True)

    def probe(self) -> list[MetricSpec]:
        return [self.series[0].spec(f"loadavg/host/load{w}_count",
                                    f"runnable processes averaged over {w} min")
                for w in _WINDOWS]

    def sample(self) -> dict[str, float]:
        return {f"loadavg/host/load{w}_count": v
                for w, v in zip(_WINDOWS, os.getloadavg(), strict=True)}
