"""An example third-party CPU-energy source: a socket's cumulative energy counter, read
from a powercap-style file (``$CPUMETER_FILE``, µJ: a RAPL zone's ``energy_uj``).

It declares ``cpumeter/socket0/energy_uj`` as a cumulative energy counter (role
``energy_counter``) of the host's CPU side (scope ``host``, unit µJ): that is all radtrack
needs to count it in a run's energy and CO2e and, for rows sharing the host, to split it by
their processes' CPU time (whichever listener declares that: ``top``'s ``proc_cpu`` and
``host_cpu`` series), with no change to radtrack (docs/listeners.md). A real one would read
a vendor's interface; this one has no wrap handling.
"""

from __future__ import annotations

import os
from pathlib import Path

from radtrack.listeners import Availability, Listener, MetricSpec, Series

FILE_ENV = "CPUMETER_FILE"
KEY = "cpumeter/socket0/energy_uj"


class CpuMeterListener(Listener):
    name = "cpumeter"
    series = (Series("cpumeter/socket<n>/energy_uj", "µJ", role="energy_counter", scope="host",
                     label="socket <n> energy counter", unit_text="µJ",
                     description="the socket's cumulative energy counter", source=f"${FILE_ENV}"),)

    @classmethod
    def available(cls) -> Availability:
        path = os.environ.get(FILE_ENV, "")
        if not path or not Path(path).is_file():
            return Availability(False, f"${FILE_ENV} names no readable counter file")
        return Availability(True)

    def probe(self) -> list[MetricSpec]:
        return [self.series[0].spec(KEY)]

    def sample(self) -> dict[str, float]:
        return {KEY: float(Path(os.environ[FILE_ENV]).read_text().strip())}
