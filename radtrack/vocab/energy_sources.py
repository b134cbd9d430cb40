"""Which stored series give a device's energy and power: chosen by role, never by listener.

Every reader that shows energy (run summaries, error bars, attribution, code windows, CO2e)
asks here. A series counts by what its listener declares (``Series``, radtrack/vocab/series.py:
role, scope, unit, flavour, priority; :func:`radtrack.vocab.meaning.describe`):

- ``energy_counter`` in an energy unit (J, mJ, µJ, kJ, Wh, kWh), scope ``device`` or
  ``host``: a device's cumulative counter; its energy is last minus first reading (over
  the counter's lives: stats.counter_delta);
- ``device_power`` in a power unit (W, mW, kW), scope ``device`` or ``host``: the whole
  device's power; its flavour says how it was taken: ``average`` (an interval's mean,
  integrated before an instantaneous reading), ``""`` (instantaneous), ``samples`` (the
  source's own buffer: error bars and attribution's shape, not the run's total),
  ``running_average`` (never integrated);
- ``power_rail`` (power, or a part's cumulative counter in an energy unit): a part of a
  device's total. A rail's energy is shown per rail and never added to its device's:
  :func:`rail_sources` gives each rail's series (its name:
  :func:`radtrack.vocab.meaning.rail_name`) by the device's rule (a counter's last minus
  first reading, else its interval-average power, else its instantaneous power,
  integrated; a mean since the source started, or a source's own samples, never); its
  joules (radtrack/compute/energy_sums.py ``rail_energies``) are stored as
  ``summary/<rail>/energy_j`` (radtrack/vocab/schema.py ``rail_energy_key``).

The *device* of a series is its key's middle part (``smi/gpu0/power_w`` -> ``gpu0``,
``rapl/package0/energy_j`` -> ``package0``): two listeners that name a device alike measure
the same device, and only one of them counts, the one whose series declares the higher
``priority`` (ties: the key that sorts first). Scope ``device`` is a GPU or a board,
``host`` the machine's CPU side (CPU package, DRAM): both are in a run's total energy,
each shown apart (radtrack/compute/energy_sums.py ``device_energies``). Who kept a host's CPUs busy (its CPU-side
devices are split by it among co-located runs) comes by role too: :func:`cpu_time_keys`.

Pure: no MLflow, no store access; the vocabulary floor (docs/architecture.md "Floors"): the
joules themselves are computed one floor up, radtrack/compute/energy_sums.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from radtrack.vocab import schema
from radtrack.vocab.declared import series_of
from radtrack.vocab.meaning import RAIL_FLAVOURS, describe, rail_name
from radtrack.vocab.series import DEFAULT_REFRESH_S  # noqa: F401 - readers' default period, from here

#: unit -> factor to watts / joules
POWER_UNITS = {"W": 1.0, "mW": 1e-3, "kW": 1e3, "µW": 1e-6, "uW": 1e-6}
ENERGY_UNITS = {"J": 1.0, "mJ": 1e-3, "µJ": 1e-6, "uJ": 1e-6, "kJ": 1e3, "Wh": 3600.0,
                "kWh": 3.6e6}
#: the scopes whose energy is the run's (a whole GPU or board; the host's CPU side)
ENERGY_SCOPES = ("device", "host")
#: how a device's energy is found, best first: counter, interval average, instantaneous
ENERGY_KINDS = ("counter", "average", "power")
_OWN = (schema.SUMMARY_PREFIX, schema.ATTRIBUTION_PREFIX, schema.WINDOW_PREFIX)
_FLAVOUR_KINDS = {"": "power", "average": "average", "samples": "samples"}


@dataclass(frozen=True)
class Source:
    """One series that measures a device's energy or power."""

    key: str  # as the listener emits it: "smi/gpu0/energy_j"
    device: str  # the key's middle part: "gpu0"
    kind: str  # counter, average, power, samples; rail (a part of a device)
    scale: float  # factor to J (counter, or a rail's counter) or to W
    scope: str  # device or host
    priority: int = 0
    unit_kind: str = "power"  # "power" (W, mW) or "energy" (a counter: J, µJ)
    flavour: str = ""  # a power reading's kind, as declared (vocab.series.FLAVOURS)
    refresh_s: float | None = None  # its sensor's declared refresh period; None: not declared

    @property
    def cumulative(self) -> bool:
        """A counter (energy = last - first), not a power reading."""
        return self.unit_kind == "energy"


def device_of(key: str) -> str:
    """The device a listener key measures: its middle part (``smi/gpu0/power_w`` -> ``gpu0``),
    the listener's name for a two-part key; node K's of a multi-node run is its own device,
    ``node<K>/<device>`` (``node1/smi/gpu0/power_w`` -> ``node1/gpu0``): never node 0's."""
    node, own = schema.split_node(key)
    if node is not None:
        return f"{schema.node_scope(node)}/{device_of(own)}"
    parts = key.split("/")
    return "/".join(parts[1:-1]) or parts[0]


def source(key: str) -> Source | None:
    """What ``key`` (a listener's series) is as an energy source, None when it is none;
    radtrack's own figures (summaries, attribution, code windows) are never a source."""
    if key.startswith(_OWN):
        return None
    m = describe(key)
    if m.scope not in ENERGY_SCOPES or m.stat:
        return None
    if m.role == "energy_counter" and m.unit in ENERGY_UNITS:
        return Source(m.key, device_of(m.key), "counter", ENERGY_UNITS[m.unit], m.scope,
                      m.priority, "energy", refresh_s=m.refresh_s)
    if m.role == "device_power" and m.unit in POWER_UNITS and m.flavour in _FLAVOUR_KINDS:
        return Source(m.key, device_of(m.key), _FLAVOUR_KINDS[m.flavour], POWER_UNITS[m.unit],
                      m.scope, m.priority, refresh_s=m.refresh_s)
    if m.role == "power_rail" and (m.unit in POWER_UNITS or m.unit in ENERGY_UNITS):
        energy = m.unit in ENERGY_UNITS
        return Source(m.key, device_of(m.key), "rail",
                      ENERGY_UNITS[m.unit] if energy else POWER_UNITS[m.unit], m.scope,
                      m.priority, "energy" if energy else "power", m.flavour, m.refresh_s)
    return None


def sources(keys: Iterable[str]) -> dict[str, list[Source]]:
    """device -> its energy and power sources among ``keys`` (listener keys, no prefix)."""
    out: dict[str, list[Source]] = {}
    for key in sorted(set(keys)):
        if (found := source(key)) is not None:
            out.setdefault(found.device, []).append(found)
    return out


def best(found: Iterable[Source], kind: str) -> Source | None:
    """The ``kind`` source of one device a reader uses: the highest priority, then the
    key that sorts first (two listeners of one device never both count)."""
    return min((s for s in found if s.kind == kind), key=lambda s: (-s.priority, s.key),
               default=None)


def energy_sources(keys: Iterable[str]) -> dict[str, Source]:
    """device -> the series its energy comes from: its counter, else its interval-average
    power, else its instantaneous power. Rails are never a device's total."""
    out = {}
    for device, found in sources(keys).items():
        chosen = next((s for kind in ENERGY_KINDS if (s := best(found, kind)) is not None), None)
        if chosen is not None:
            out[device] = chosen
    return out


def power_source(keys: Iterable[str], device: str, *kinds: str) -> Source | None:
    """The device's power series of the first of ``kinds`` it has (default: instantaneous,
    then interval average)."""
    found = sources(k for k in keys if device_of(k) == device).get(device, [])
    return next((s for kind in (kinds or ("power", "average")) if (s := best(found, kind))), None)


def rails(keys: Iterable[str]) -> list[Source]:
    """Every rail series (parts of a device's total), by key."""
    return sorted((s for found in sources(keys).values() for s in found if s.kind == "rail"),
                  key=lambda s: s.key)


def rail_sources(keys: Iterable[str]) -> dict[str, Source]:
    """rail name -> the series its energy comes from, as a device's: its counter, else its
    interval-average power, else its instantaneous power (then the highest priority, the
    key that sorts first); a rail read only as a mean since start has none."""
    found: dict[str, list[Source]] = {}
    for s in rails(keys):
        if s.flavour in RAIL_FLAVOURS:
            found.setdefault(rail_name(s.key), []).append(s)
    order = {"": 2, "average": 1}
    return {rail: min(group, key=lambda s: (0 if s.cumulative else order[s.flavour],
                                            -s.priority, s.key))
            for rail, group in sorted(found.items())}


def bridging_power_key(counter_key: str) -> str | None:
    """The power reading beside an energy counter, ``<device>/power_w`` for
    ``<device>/energy_j`` (same listener, same device): what bridges the gap between two
    lives of the counter (stats.stitch_counter); None for a counter in other units."""
    head, _, last = counter_key.rpartition("/")
    return f"{head}/power_w" if last == "energy_j" and head else None


def find(keys: Iterable[str], device: str, quantity: str, *roles: str) -> str | None:
    """The key of ``device``'s reading named ``quantity`` (its last part) whose declared role
    is one of ``roles``, from whichever listener reads it (the highest priority first):
    ``find(keys, "gpu0", "gpu_util_pct", "utilisation")``."""
    found = [m for k in keys if device_of(k) == device and k.rsplit("/", 1)[-1] == quantity
             and (m := describe(k)).role in roles]
    return min(found, key=lambda m: (-m.priority, m.key)).key if found else None


@dataclass(frozen=True)
class CpuTimeKeys:
    """The series that say who kept a host's CPUs busy (co-location's CPU-energy split,
    radtrack/compute/cpu_energy_share.py), by role: ``proc_cpu`` (the run's process tree,
    % of one core) and ``host_cpu`` of scope ``host``, either over all cores (its unit text
    says so: ``% of all cores``) or per core (``% of one core``)."""

    proc: str | None  # the run's process tree's CPU, % of one core
    host: str | None  # the host's busy CPU, % of all cores
    cores: tuple[str, ...]  # each core's busy CPU, % of one core

    @property
    def host_known(self) -> bool:
        """Whether the host's busy time in core-seconds can be told (the per-core series
        number the cores, or sum to it)."""
        return bool(self.cores)


def cpu_time_keys(keys: Iterable[str]) -> CpuTimeKeys:
    """The CPU-time series among ``keys`` (listener keys), each the highest priority of its
    kind (ties: the key that sorts first); never a radtrack summary, nor node K's series of a
    multi-node run (its host is not the run's first node's)."""
    found = [m for k in sorted(set(keys)) if not k.startswith(_OWN) and schema.split_node(k)[0] is None
             and (m := describe(k)).role in ("proc_cpu", "host_cpu") and not m.stat]

    def first(ms: list) -> str | None:
        return min(ms, key=lambda m: (-m.priority, m.key)).key if ms else None

    proc = [m for m in found if m.role == "proc_cpu" and m.scope == "run"
            and "all cores" not in m.unit_text]
    host = [m for m in found if m.role == "host_cpu" and m.scope == "host"]
    whole = [m for m in host if "one core" not in m.unit_text]
    cores = [m for m in host if "one core" in m.unit_text]
    if cores:  # one listener's cores only: two listeners' would count each core twice
        best_listener = first(cores).split("/", 1)[0]  # type: ignore[union-attr]
        cores = [m for m in cores if m.key.split("/", 1)[0] == best_listener]
    return CpuTimeKeys(first(proc), first(whole), tuple(m.key for m in cores))


def devices_with(keys: Iterable[str], *roles: str, scope: str | None = None) -> list[str]:
    """The devices that have a reading of one of ``roles`` (and ``scope``), in order."""
    return sorted({device_of(k) for k in keys if (m := describe(k)).role in roles
                   and (scope is None or m.scope == scope) and not m.stat},
                  key=_device_order)


def declares(listener: str, *roles: str) -> bool:
    """Whether the registered listener ``listener`` declares a series of one of ``roles``
    (False for a name no package registers, or one that does not load)."""
    return any(s.role in roles for s in series_of(listener) or ())


def _device_order(device: str) -> tuple[str, int]:
    digits = "".join(c for c in device if c.isdigit())
    return device.rstrip("0123456789"), int(digits) if digits else -1
