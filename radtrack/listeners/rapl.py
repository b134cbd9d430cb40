"""rapl: CPU package and DRAM energy per socket from the kernel's powercap RAPL counters.

The kernel's powercap framework (Documentation/power/powercap/powercap.rst) lists one
folder per RAPL zone under ``/sys/class/powercap``: ``intel-rapl:<i>`` a top zone
(``name`` ``package-<n>``, or ``psys`` for the whole platform), ``intel-rapl:<i>:<j>`` its
subzones (``core``, ``uncore``, ``dram``). AMD Zen CPUs are served by the same driver
(zones named ``intel-rapl``); a zone folder named ``amd-rapl:...`` is read alike. Each zone
has ``energy_uj``, a cumulative counter in µJ that wraps at ``max_energy_range_uj``.
``intel-rapl-mmio:*`` zones repeat a package's counter through another interface: skipped.

Keys (J counted from the listener's first reading, held for by the launcher; W the mean
since the previous reading, exact):

- ``rapl/pkg<n>/energy_j``, ``rapl/pkg<n>/power_w``: CPU package ``n`` (cores, caches,
  memory controller): an ``energy_counter`` / ``device_power`` of scope ``host``;
- ``rapl/pkg<n>/dram/energy_j``, ``.../power_w``: the DRAM of socket ``n``, outside the
  package's figure: a device of its own, added to the run's energy;
- ``rapl/pkg<n>/<core|uncore>/...``: parts of the package (``power_rail``), never added;
- ``rapl/psys/...``: the platform (package, DRAM and more): a ``power_rail``, shown, never
  added (it overlaps the packages).

A counter is exact at any pace as long as it wraps at most once between two readings (at
least 15 min at 250 W for the usual 262 kJ range): it is read every ``ENERGY_EVERY_S``
(``RADTRACK_RAPL_EVERY_S``), at the first and at the final reading. A reading below the previous one is a wrap (the range added) unless the wrap
would mean more than ``PLAUSIBLE_W`` over the time between the two readings: then the
counter was reset (driver reloaded, CPU hot-plugged) and counts from 0 again; the energy
before the reset is kept (what the reset lost between two readings is at most a pace's).

Since Linux 5.10 ``energy_uj`` is readable by root only (CVE-2020-8694, "PLATYPUS"):
:meth:`RaplListener.available` says so. ``RADTRACK_POWERCAP_ROOT`` points the listener at
another folder of the same layout (a recorded tree, in tests).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from radtrack.listeners.base import (
    HOST_SAMPLER,
    Availability,
    Every,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
    describe_by,
)

ROOT_ENV = "RADTRACK_POWERCAP_ROOT"
DEFAULT_ROOT = "/sys/class/powercap"
ENERGY_EVERY_S = 1.0  # counters are exact at any pace; 1 s gives the power's shape
EVERY_ENV = "RADTRACK_RAPL_EVERY_S"  # another pace (0: every interval)
PLAUSIBLE_W = 5000.0  # above this between two readings, a lower reading is a reset, not a wrap
_ZONE = re.compile(r"^(intel-rapl|amd-rapl):(\d+)(?::(\d+))?$")
_PACKAGE = re.compile(r"^package-(\d+)(?:-die-(\d+))?$")


#: the counters' update period (s): about 1 ms (Intel SDM, MSR_PKG_ENERGY_STATUS); the
#: readings' own 1-s spacing is what limits a code window (vocab/series.py Series.refresh_s)
REFRESH_S = 0.001


def _series(pattern: str, unit: str, role: str, label: str, description: str,
            flavour: str = "") -> Series:
    return Series(f"rapl/{pattern}", unit, role, "host", label, unit, description,
                  "/sys/class/powercap/*/energy_uj", flavour, refresh_s=REFRESH_S)


_E, _P = "energy counted from the run's start", "mean power since the previous reading"
SERIES = (
    _series("psys/energy_j", "J", "power_rail", "platform (psys) energy",
            f"the whole platform, overlapping the packages and DRAM: {_E}; never added"),
    _series("psys/power_w", "W", "power_rail", "platform (psys) power",
            f"the whole platform: {_P}; never added", "average"),
    _series("<pkg>/dram/energy_j", "J", "energy_counter", "DRAM <pkg> energy counter",
            f"the socket's DRAM, outside its package: {_E}"),
    _series("<pkg>/dram/power_w", "W", "device_power", "DRAM <pkg> power",
            f"the socket's DRAM: {_P}", "average"),
    _series("<pkg>/<part>/energy_j", "J", "power_rail", "CPU <pkg> <part> energy",
            f"a part of its package's energy: {_E}"),
    _series("<pkg>/<part>/power_w", "W", "power_rail", "CPU <pkg> <part> power",
            f"a part of its package's power: {_P}", "average"),
    _series("<pkg>/energy_j", "J", "energy_counter", "CPU package <pkg> energy counter",
            f"CPU package (cores, caches, memory controller): {_E}"),
    _series("<pkg>/power_w", "W", "device_power", "CPU package <pkg> power",
            f"CPU package: {_P}", "average"),
)


def energy_every_s(environ: Mapping[str, str] | None = None) -> float:
    """The counters' pace in seconds: ENERGY_EVERY_S unless the environment sets one."""
    raw = (os.environ if environ is None else environ).get(EVERY_ENV, "").strip()
    if not raw:
        return ENERGY_EVERY_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{EVERY_ENV}={raw!r}: give seconds >= 0 (0: every interval)")
    return value


def root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)


@dataclass
class Zone:
    """One RAPL zone: where its counter is and the key prefix it is stored under."""

    folder: Path
    prefix: str  # "rapl/pkg0", "rapl/pkg0/dram", "rapl/psys"
    max_uj: int | None  # the counter's range, None where unreadable
    last_uj: int | None = None  # the previous reading
    last_t: float | None = None
    total_uj: int = 0  # counted since the first reading
    resets: int = 0
    wraps: int = 0

    def read(self) -> int:
        return int((self.folder / "energy_uj").read_text().strip())


def _name(folder: Path) -> str:
    try:
        return (folder / "name").read_text().strip()
    except OSError:
        return ""


def zones(base: Path) -> list[Zone]:
    """The RAPL zones under ``base`` (a powercap class folder), packages first, by key."""
    if not base.is_dir():
        return []
    found: dict[tuple[str, str], tuple[str, str]] = {}  # (type, top index) -> package part
    entries = [(m, p) for p in sorted(base.iterdir()) if (m := _ZONE.match(p.name))]
    tops = {(m[1], m[2]): _name(p) for m, p in entries if m[3] is None}
    for (kind, index), name in tops.items():
        if (pm := _PACKAGE.match(name)) is not None:
            found[(kind, index)] = (f"pkg{pm[1]}" + (f"_die{pm[2]}" if pm[2] else ""), name)
    out: list[Zone] = []
    for m, folder in entries:
        name = _name(folder)
        if m[3] is None:  # a top zone: a package, the platform, or a lone DRAM zone
            if (m[1], m[2]) in found:
                prefix = f"rapl/{found[(m[1], m[2])][0]}"
            elif name == "psys":
                prefix = "rapl/psys"
            elif name == "dram":
                prefix = f"rapl/pkg{m[2]}/dram"
            else:
                continue
        else:
            parent = found.get((m[1], m[2]))
            part = re.sub(r"[^a-z0-9_]", "_", name.lower())
            if parent is None or not part:
                continue
            prefix = f"rapl/{parent[0]}/{part}"
        try:
            max_uj: int | None = int((folder / "max_energy_range_uj").read_text().strip())
        except (OSError, ValueError):
            max_uj = None
        out.append(Zone(folder, prefix, max_uj if max_uj else None))
    return sorted(out, key=lambda z: z.prefix)


def increment(zone: Zone, now_uj: int, dt: float) -> int:
    """µJ since the zone's previous reading: a wrap adds the counter's range; a drop the
    range cannot explain (more than PLAUSIBLE_W over ``dt``) is a reset, counted from 0."""
    assert zone.last_uj is not None
    if now_uj >= zone.last_uj:
        return now_uj - zone.last_uj
    if zone.max_uj is not None:
        wrapped = zone.max_uj - zone.last_uj + now_uj
        if wrapped <= PLAUSIBLE_W * max(dt, 1e-3) * 1e6:
            zone.wraps += 1
            return wrapped
    zone.resets += 1
    return now_uj


class RaplListener(Listener):
    """CPU package and DRAM energy and power from RAPL, every ENERGY_EVERY_S and at the end."""

    name = "rapl"
    series = SERIES
    # the counters keep no history, so energy counts from the first reading; holding the
    # scripts for it (0.5-1 s: the shared host sampler's first reading) would cost every run
    # on a RAPL host the start target, so the gap is left out and documented (docs/listeners.md)
    holds_start = False

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.root = root()
        self.zones: list[Zone] = []
        self._every = Every(energy_every_s(), config.interval)
        self.clock = time.monotonic

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        return HOST_SAMPLER  # a few sysfs reads: they share top's and smi's wake-ups

    @classmethod
    def available(cls) -> Availability:
        base = root()
        found = zones(base)
        if not found:
            where = f"{base} (${ROOT_ENV})" if os.environ.get(ROOT_ENV) else str(base)
            return Availability(False, f"no RAPL zones under {where}: no intel-rapl/amd-rapl "
                                       "powercap driver (not an x86 host, a VM that hides RAPL, "
                                       "or the intel_rapl_common module not loaded)")
        for zone in found:
            try:
                zone.read()
            except PermissionError:
                return Availability(False, f"{zone.folder / 'energy_uj'} is readable by root only "
                                           "(Linux >= 5.10, CVE-2020-8694): run as root, or let "
                                           "the user read it (chmod o+r, or a udev rule)")
            except (OSError, ValueError) as exc:
                return Availability(False, f"{zone.folder / 'energy_uj'} unreadable: {exc}")
        return Availability(True)

    def probe(self) -> list[MetricSpec]:
        self.zones = zones(self.root)
        if not self.zones:
            raise RuntimeError(f"no RAPL zones under {self.root}")
        specs = []
        for zone in self.zones:
            for quantity in ("energy_j", "power_w"):
                spec = describe_by(SERIES, f"{zone.prefix}/{quantity}")
                assert spec is not None, zone.prefix
                specs.append(spec)
        return specs

    def _read(self) -> dict[str, float]:
        now = self.clock()
        out: dict[str, float] = {}
        for zone in self.zones:
            raw = zone.read()
            if zone.last_uj is not None and zone.last_t is not None:
                dt = now - zone.last_t
                step = increment(zone, raw, dt)
                zone.total_uj += step
                if dt > 0:
                    out[f"{zone.prefix}/power_w"] = step / 1e6 / dt
            zone.last_uj, zone.last_t = raw, now
            out[f"{zone.prefix}/energy_j"] = zone.total_uj / 1e6
        return out

    def sample(self) -> dict[str, float]:
        return self._read() if self._every.due(self.clock()) else {}

    def final_sample(self) -> dict[str, float]:
        return self._read()

    def tags(self) -> dict[str, str]:
        return {"radtrack.listener.rapl.zones": ", ".join(
            f"{z.prefix.removeprefix('rapl/')}={z.folder.name}" for z in self.zones)}
