"""radtrack.listeners: pluggable metric collectors, each run as its own subprocess.

The contract lives in :mod:`radtrack.listeners.base`, that of tools which run the workload
under themselves (nsys, ncu) in :mod:`radtrack.listeners.wrappers`; both are found through
the ``radtrack.listeners`` entry-point group (:mod:`radtrack.listeners.registry`).
"""

from radtrack.listeners.base import Availability, Listener, ListenerConfig, MetricSpec, Series
from radtrack.listeners.wrappers import CommandWrapper

__all__ = ["Availability", "CommandWrapper", "Listener", "ListenerConfig", "MetricSpec", "Series"]
