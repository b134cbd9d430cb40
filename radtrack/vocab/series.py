"""How a listener says what it emits: the words every room reads a series by.

A stored key is ``<listener>/<scope>/<quantity>_<unit>`` (:func:`check_key`, :func:`split_unit`);
what it is comes from its listener's declaration (:class:`Series` on ``Listener.series``,
radtrack/listeners/base.py, which re-exports these names for listener authors) or, where none
is declared, from the key's shape (:func:`derived_role`, :func:`derived_scope`,
:func:`derived_label`). Roles (:data:`ROLES`), scopes (:data:`SCOPES`) and power flavours
(:data:`FLAVOURS`) are closed sets. Readers ask radtrack/vocab/meaning.py, which reads these.

The vocabulary floor: imports nothing of radtrack (docs/architecture.md "Floors").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

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
#: the refresh period (s) readers assume for a power or energy series whose listener declares
#: none (:attr:`Series.refresh_s`): 1 s, the slowest sensor radtrack reads (a 1-s average),
#: so that no code window shorter than a reading may change is taken as resolved, and an
#: unmeasured sensor's energy interval is never narrower than a measured one's
DEFAULT_REFRESH_S = 1.0
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
    #: how often the sensor behind a power or energy series publishes a new value (s), as
    #: measured (smi: 0.1 s on the H100 and H200); None: not declared, readers take
    #: :data:`DEFAULT_REFRESH_S`. Code windows shorter than it are flagged below resolution,
    #: and an energy interval of a GPU model without measured constants counts updates by it.
    refresh_s: float | None = None

    def __post_init__(self) -> None:
        if self.refresh_s is not None and not self.refresh_s > 0:
            raise ValueError(f"series {self.pattern!r}: refresh_s must be > 0 s, got {self.refresh_s!r}")
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
