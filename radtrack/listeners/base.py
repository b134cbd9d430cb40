"""The small typed contract every listener implements.

A listener is instantiated inside its own subprocess (``python -m radtrack.listeners``),
probed once (:meth:`Listener.probe` returns the metrics it will emit, with units), then
sampled on monotonic deadlines by :mod:`radtrack.listeners.runner`; it never talks to
the tracking store. Readings a device does not support are dropped at probe time and
reported through :meth:`Listener.tags`, never emitted as 0 or -1.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from radtrack.vocab.device_inventory import DeviceInfo

# A listener declares what it emits in the vocabulary's words (radtrack/vocab/series.py); they
# are named here too, so that a listener (radtrack's or a plugin's) imports its contract from one place.
from radtrack.vocab.series import (
    FLAVOURS,
    ROLES,
    SCOPES,
    UNIT_SUFFIXES,
    MetricSpec,
    Series,
    check_key,
    derived_label,
    derived_role,
    derived_scope,
    describe_by,
    split_unit,
)

__all__ = ["FLAVOURS", "HOST_SAMPLER", "ROLES", "SCOPES", "UNIT_SUFFIXES", "Availability", "DeviceInfo", "Every",
           "Listener", "ListenerConfig", "MetricSpec", "Plugin", "Series", "TimedSample", "check_key",
           "derived_label", "derived_role", "derived_scope", "describe_by", "rate_window", "split_unit"]

# The session of the in-process samplers that read this host's own sources (NVML, /proc,
# psutil): smi, dcgm on NVML GPM, top and iostat. At 10 Hz most of a Python sampler's CPU
# is the wake-up itself (an interpreter woken with cold caches: 440 us of CPU a reading of
# top's where the same reading in a warm loop costs 56 us, on the 2-core VM), so one
# process waking once for all of them is cheaper than one each (docs/performance.md).
HOST_SAMPLER = "host"


class Every:
    """Gate for a reading taken at most once per ``period`` seconds in a sampler running
    every ``interval`` seconds: readings whose source refreshes slowly (a 1-s average, a
    5-s load average) or that cost a lot (an energy counter) are read at their own pace.
    Half an interval of slack keeps scheduling jitter from skipping a whole period."""

    def __init__(self, period: float, interval: float):
        self.period = period
        self.slack = interval / 2
        self.last = float("-inf")

    def due(self, now: float) -> bool:
        if now - self.last >= self.period - self.slack:
            self.last = now
            return True
        return False

    def force(self) -> None:
        """Make the next :meth:`due` true (for the final reading at stop)."""
        self.last = float("-inf")


def rate_window(since: float | None, now: float, interval: float) -> bool:
    """Whether a rate between readings at ``since`` and ``now`` spans enough time to report:
    at least half an interval. Counters that step coarsely (/proc's 10-ms CPU ticks, whole
    disk operations) read 0 or 1000 % over a few ms, the window between the probe and the
    first sample or between the last sample and the final one; a reading that fails this
    is not reported and the earlier one stays the baseline. False without a baseline."""
    return since is not None and now - since >= interval / 2


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class ListenerConfig:
    """What a listener needs to know about the run it watches."""

    interval: float = 1.0  # seconds between samples
    devices: list[str] = field(default_factory=list)  # as CUDA_VISIBLE_DEVICES entries; [] = all
    pid: int | None = None  # root of the run's process tree (the workload process)
    outdir: Path | None = None  # where a listener may leave artifacts (profiler reports)
    # where a restarted listener picks up sources with their own timestamps (driver sample
    # buffers): metric key -> the source's timestamp of the last sample emitted for the run
    resume: dict[str, int] = field(default_factory=dict)
    # the run's start (unix s), when the listener starts after its script: a source that
    # keeps history (the driver's power samples) is read back to it, and smi's energy
    # counts from it (radtrack/listeners/energy_backfill.py)
    since: float | None = None


@dataclass(frozen=True)
class TimedSample:
    """A reading stamped by its source (a driver's sample buffer), not by the sampler."""

    t: float  # unix seconds, the source's own timestamp
    values: dict[str, float]
    resume: dict[str, int] | None = None  # positions to restart from once this is written


class Plugin(ABC):
    """What every entry of the ``radtrack.listeners`` group has: a name, its config, and
    whether it can run here. :class:`Listener` samples beside the workload;
    :class:`radtrack.listeners.wrappers.CommandWrapper` runs the workload under itself."""

    name: ClassVar[str]
    #: the registry's users tell wrappers from sampling listeners by this flag
    wraps_command: ClassVar[bool] = False
    #: the launcher holds the run's scripts until this listener's first reading: what it
    #: measures before then would be lost (a power source that cannot reach back to
    #: ``ListenerConfig.since`` as smi does, radtrack/listeners/energy_backfill.py: tegrastats)
    holds_start: ClassVar[bool] = False

    def __init__(self, config: ListenerConfig):
        self.config = config

    @classmethod
    def available(cls) -> Availability:
        """Whether it can run on this host, with a human reason when not."""
        return Availability(True)


class Listener(Plugin):
    """Base class: subclass, set ``name``, implement probe/sample; declare in ``series``
    what each key is (role, scope, unit), so that readers know it without a probe."""

    #: every family of keys :meth:`probe` may return; () = derived from the keys' shape
    series: ClassVar[tuple[Series, ...]] = ()

    @abstractmethod
    def probe(self) -> list[MetricSpec]:
        """Called once before sampling; returns the metrics :meth:`sample` will emit."""

    @abstractmethod
    def sample(self) -> dict[str, float]:
        """One reading: metric key -> value. Keys must be among those probed."""

    def grown(self) -> list[MetricSpec] | None:
        """Every metric it emits, when they grew since its last hello (smi following a GPU
        the run turned out to use, radtrack/listeners/gpu_follow.py); None when nothing changed.
        Asked after each reading: the runner then sends a new hello with these and
        :meth:`tags`, which replaces the earlier one. Most listeners never grow."""
        return None

    def timed_samples(self) -> list[TimedSample]:
        """Readings with their own timestamps gathered since the last call (by
        :meth:`sample` or :meth:`final_sample`); the runner writes each as its own sample
        line before the regular one (they predate it). Most listeners have none."""
        return []

    def final_sample(self) -> dict[str, float]:
        """The reading taken when sampling stops; listeners that read some values only now
        and then (to stay cheap) read everything here."""
        return self.sample()

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        """The session this listener can share with other listeners in one sampler process
        (:data:`HOST_SAMPLER`: one interpreter, one import of each library, one NVML
        session, one wake-up schedule), or None to run in a process of its own (the
        default). ``env`` is the environment it would run in. The launcher runs listeners
        of a run that name the same session in one process."""
        return None

    @classmethod
    def inventory(cls) -> list[DeviceInfo]:
        """The GPUs of this host this listener reads, each with the variable that selects it
        for a process (radtrack/vocab/device_inventory.py): the launcher's inventory is the
        union of every registered listener's (radtrack/gpus.py), so a row's Devices is placed
        on a new vendor's GPU by its listener alone. [] for a listener that reads no GPU (the
        default), or where its library is missing; it must not raise."""
        return []

    def tags(self) -> dict[str, str]:
        """Run tags describing the probe (supported/unsupported fields, device names, ...)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most listeners hold nothing
        """Release resources; must be safe to call twice."""
