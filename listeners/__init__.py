"""radtrack.listeners: pluggable metric collectors, each run as its own subprocess.

The contract lives in :mod:`radtrack.listeners.base`; listeners are found through
the ``radtrack.listeners`` entry-point group (:mod:`radtrack.listeners.registry`).
"""

from radtrack.listeners.base import Availability, Listener, ListenerConfig, MetricSpec

__all__ = ["Availability", "Listener", "ListenerConfig", "MetricSpec"]
