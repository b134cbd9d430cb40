"""An example third-party power source: a metered device whose power is modelled from the
host's 1-minute load average (``IDLE_W`` + ``PER_PROCESS_W`` per runnable process).

It declares ``loadmeter/meter<n>/power_w`` as a whole device's power (role
``device_power``, scope ``device``, unit W): that is all radtrack needs to give a run
measured with it an energy figure, a power summary, co-location attribution, code-window
energy and a CO2e footprint, with no change to radtrack (docs/listeners.md, "Feeding
energy: roles"). A real meter would read a wall plug, a PDU or a vendor's API instead.
"""

from __future__ import annotations

import os

from radtrack.listeners import Availability, Listener, MetricSpec, Series

IDLE_W = 40.0
PER_PROCESS_W = 5.0
KEY = "loadmeter/meter0/power_w"


class LoadMeterListener(Listener):
    name = "loadmeter"
    series = (Series("loadmeter/meter<n>/power_w", "W", role="device_power", scope="device",
                     label="metered device <n> power", unit_text="W",
                     description=f"{IDLE_W:g} W + {PER_PROCESS_W:g} W per runnable process "
                                 "(1-min load average)",
                     source="os.getloadavg",
                     # the meter's reading changes at every read: its period is the sampling's
                     refresh_s=0.1),)

    @classmethod
    def available(cls) -> Availability:
        if not hasattr(os, "getloadavg"):
            return Availability(False, "os.getloadavg is not offered on this platform")
        return Availability(True)

    def probe(self) -> list[MetricSpec]:
        return [self.series[0].spec(KEY)]

    def sample(self) -> dict[str, float]:
        return {KEY: IDLE_W + PER_PROCESS_W * os.getloadavg()[0]}
