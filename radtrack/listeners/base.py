"""The small typed contract every listener implements.

A listener is instantiated inside its own subprocess (``python -m radtrack.listeners``),
probed once (:meth:`Listener.probe` returns the metrics it will emit, with units), then
sampled on monotonic deadlines by :mod:`radtrack.listeners.runner`; it never talks to
the tracking store. Readings a device does not support are dropped at probe time and
reported through :meth:`Listener.tags`, never emitted as 0 or -1.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import ClassVar

# Metric keys: <listener>/<scope>/<quantity>_<unit>; only characters MLflow accepts.
_KEY_RE = re.compile(r"^[A-Za-z0-9_\-./ ]+$")


def check_key(key: str) -> str:
    """Return ``key`` if MLflow accepts it as a metric name, else raise ValueError."""
    if not key or not _KEY_RE.match(key) or "//" in key or key.startswith("/"):
        raise ValueError(f"invalid metric key {key!r}: use letters, digits, '_-./ ' only")
    return key


#: What a series is, whatever listener emits it: readers (summaries, energy, attribution,
#: the page, export) pick series by role, not by listener name. A closed set; a listener
#: that declares none gets one derived from its key (:func:`derived_role`).
ROLES: dict[str, str] = {
    "device_power": "power drawn by a whole device (a GPU board, a Jetson module's input)",
    "power_rail": "power of one supply rail, a part of a device's total",
    "energy_counter": "a cumulative hardware energy counter, counting from the run's start",
    "energy": "energy over a span, computed by radtrack (summaries, shares, code windows)",
    "attributed_power": "a device's power split by co-location accounting (a run's share, idle, others)",
    "proc_share": "the processes' share of a device (SM time)",
    "host_cpu": "CPU busy time of the whole host (all cores, or one core)",
    "proc_cpu": "CPU time of the run's process tree",
    "temperature": "a temperature sensor",
    "utilisation": "how busy a device, engine or bus was",
    "memory": "memory in use, or its size",
    "clock": "a clock frequency or performance state",
    "io": "bytes or operations moved (disk, network, PCIe, NVLink)",
    "other": "anything else: counts, flags, costs, the script's own metrics",
}
#: Whose figure a series is -> the word a label starts with where the listener gives none.
SCOPES: dict[str, str] = {
    "host": "host",  # the whole machine the run ran on
    "run": "run",  # the run's process tree, or the run's own figure (its script's metrics)
    "device": "GPU",  # a whole device (GPU, or a Jetson board), every process on it
    "device_share": "run's share of GPU",  # the run's part of a device it shared
    "mig": "MIG slice",  # one MIG instance of a GPU
    "workload": "workload",  # every row of a co-located workload together
}
# Units read from a key's last ``_<unit>`` suffix (the naming rule above); longest first.
UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_bytes_per_s", "B/s"), ("_samples_per_s", "samples/s"), ("_tokens_per_s", "tokens/s"),
    ("_per_s", "1/s"), ("_percentage", "%"), ("_pct", "%"), ("_kwh", "kWh"), ("_wh", "Wh"),
    ("_mw", "mW"), ("_w", "W"), ("_j", "J"), ("_mib", "MiB"), ("_gib", "GiB"), ("_kib", "KiB"),
    ("_mb", "MB"), ("_bytes", "B"), ("_mhz", "MHz"), ("_c", "°C"), ("_ms", "ms"), ("_us", "µs"),
    ("_s", "s"), ("_rpm", "rpm"), ("_v", "V"), ("_g", "g"), ("_count", "count"), ("_flag", "0/1"),
    ("_mask", "bitmask"), ("_level", "level"),
)
#: How a ``device_power`` reading was taken: readers integrate energy from an interval
#: average before an instantaneous reading, use a source's own samples for error bars and
#: attribution's shape, and never integrate a mean since the source started.
FLAVOURS: dict[str, str] = {
    "": "an instantaneous reading",
    "average": "the mean over the interval since the previous reading (integrates exactly)",
    "samples": "the source's own readings with their own timestamps (a driver's buffer)",
    "running_average": "the mean since the source started: shown, never integrated",
}
_UNIT_ROLES = {"°C": "temperature", "MiB": "memory", "GiB": "memory", "KiB": "memory",
               "MB": "memory", "MHz": "clock", "B/s": "io"}


def split_unit(key: str) -> tuple[str, str]:
    """(quantity, unit) of a key's last part by its suffix: ``power_w`` -> ('power', 'W'),
    ``loss`` -> ('loss', '')."""
    last = key.rsplit("/", 1)[-1]
    for suffix, unit in UNIT_SUFFIXES:
        if last.endswith(suffix) and len(last) > len(suffix):
            return last[: -len(suffix)], unit
    return last, ""


def derived_role(key: str) -> str:
    """The role of a key whose listener declares none, from its unit alone. Power and
    energy are never guessed: a reader must not count a series as a device's power (twice,
    perhaps) unless its listener says it is."""
    return _UNIT_ROLES.get(split_unit(key)[1], "other")


def derived_scope(key: str) -> str:
    """The scope of an undeclared key from its middle part: ``gpu<i>`` a device, ``proc`` the
    run's processes, anything else the host."""
    parts = key.split("/")
    middle = parts[1:-1]
    if "proc" in middle:
        return "run"
    if any(re.fullmatch(r"gpu\d+", p) for p in middle):
        return "device"
    return "host" if len(parts) > 1 else "run"


def derived_label(key: str, scope: str) -> str:
    """``loadavg/host/load1_count`` -> ``host load1``: the scope's word and the quantity."""
    quantity = split_unit(key)[0].replace("_", " ")
    parts = key.split("/")
    where = [p for p in parts[1:-1] if p not in ("host", "proc") and not re.fullmatch(r"gpu\d+", p)]
    return " ".join([SCOPES[scope], *where, quantity]) if len(parts) > 1 else quantity


@dataclass(frozen=True)
class MetricSpec:
    """One metric a listener emits, with what it is: its role (:data:`ROLES`), whose it is
    (:data:`SCOPES`), its unit and a short label (``run CPU``; with ``unit_text`` the page's
    and the report's title: ``run CPU (% of one core)``). A listener written before roles
    existed gives key and unit only: the rest is derived from the key (:func:`derived_role`,
    :func:`derived_scope`, :func:`derived_label`)."""

    key: str  # e.g. "smi/gpu0/power_w"
    unit: str  # e.g. "W"
    description: str = ""
    source: str = ""  # API or command it comes from, e.g. "nvmlDeviceGetPowerUsage"
    role: str = ""  # ROLES
    scope: str = ""  # SCOPES
    label: str = ""  # e.g. "run CPU", without the unit
    unit_text: str = ""  # the unit as a reader needs it, e.g. "% of one core"; "" = unit

    def __post_init__(self) -> None:
        check_key(self.key)
        derived = {"role": self.role or derived_role(self.key),
                   "scope": self.scope or derived_scope(self.key)}
        derived["label"] = self.label or derived_label(self.key, derived["scope"])
        derived["unit_text"] = self.unit_text or self.unit
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        if self.role not in ROLES:
            raise ValueError(f"metric {self.key!r}: role {self.role!r} is not one of {', '.join(ROLES)}")
        if self.scope not in SCOPES:
            raise ValueError(f"metric {self.key!r}: scope {self.scope!r} is not one of {', '.join(SCOPES)}")


_PLACEHOLDER = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True)
class Series:
    """A family of keys a listener may emit, declared once on its class (:attr:`Listener.series`)
    so that readers know what a stored key is without probing hardware: ``pattern`` is a key
    with ``<name>`` placeholders, each matching within one path part (``smi/gpu<i>/power_w``,
    ``top/temp/<sensor>_c``); ``label`` may use them (``host core <n> CPU``). The first of a
    listener's series that matches a key describes it."""

    pattern: str
    unit: str
    role: str
    scope: str
    label: str
    unit_text: str = ""
    description: str = ""
    source: str = ""
    #: a power reading's kind (:data:`FLAVOURS`): "average" for a 1-s average
    flavour: str = ""
    #: where two listeners measure the same device (the same ``<listener>/<device>/`` middle
    #: part) with the same role, readers take the higher priority's series, never both
    priority: int = 0

    def __post_init__(self) -> None:
        if self.flavour not in FLAVOURS:
            raise ValueError(f"series {self.pattern!r}: flavour {self.flavour!r} is not one of "
                             f"{', '.join(repr(f) for f in FLAVOURS)}")
        self.spec(_PLACEHOLDER.sub("x", self.pattern))  # role, scope and key checked now

    @cached_property
    def _regex(self) -> re.Pattern[str]:
        return re.compile("".join(f"(?P<{m[1]}>[^/]+?)" if m[1] else re.escape(m[0])
                                  for m in re.finditer(r"<([a-z_]+)>|[^<]+|<", self.pattern)))

    def match(self, key: str) -> dict[str, str] | None:
        """The placeholders' values if ``key`` is of this family, else None."""
        found = self._regex.fullmatch(key)
        return None if found is None else found.groupdict()

    def spec(self, key: str, description: str | None = None, source: str | None = None) -> MetricSpec:
        """The MetricSpec of one key of this family (its label's placeholders filled in)."""
        values = self.match(key) or {}
        label = _PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), self.label)
        return MetricSpec(key, self.unit, self.description if description is None else description,
                          self.source if source is None else source, self.role, self.scope, label,
                          self.unit_text)


def describe_by(series: tuple[Series, ...], key: str) -> MetricSpec | None:
    """The spec of ``key`` from the first series of ``series`` it belongs to, else None."""
    return next((s.spec(key) for s in series if s.match(key) is not None), None)


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

    def tags(self) -> dict[str, str]:
        """Run tags describing the probe (supported/unsupported fields, device names, ...)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most listeners hold nothing
        """Release resources; must be safe to call twice."""
