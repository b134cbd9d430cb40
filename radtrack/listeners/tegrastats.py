"""tegrastats: Jetson RAM/swap, per-core CPU load and clock, iGPU (GR3D) and EMC load,
temperatures and power rails, parsed from ``tegrastats --interval <ms>`` lines.

The line format changed across Jetson generations (TX1/TX2/Nano ``POM_5V_IN 1234/1234``
rails in mW without a unit, Xavier ``GPU 0/0 CPU 311/311``, Orin ``VDD_IN 5000mW/4800mW``,
lower-case sensor names on JetPack 6, a date prefix on JetPack 5, ``GR3D_FREQ 0%@[305,305]``
per GPC); :func:`parse_line` accepts all of them. Which metrics exist is decided from the
first line the board prints.
"""

from __future__ import annotations

import re
import shutil
import threading
import time

from radtrack.listeners.base import Availability, Listener, ListenerConfig, MetricSpec, Series
from radtrack.listeners.cmdstream import CommandStream

_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB")
_CPU = re.compile(r"\bCPU \[([^\]]*)\](?:@(\d+))?", re.IGNORECASE)
_EMC = re.compile(r"\bEMC(?:_FREQ)? (\d+)%(?:@(\d+))?")
_GR3D = re.compile(r"\bGR3D(?:_FREQ)? (\d+)%(?:@\[?([\d,]+)\]?)?")
_TEMP = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)@(-?\d+(?:\.\d+)?)C\b")
_RAIL_MW = re.compile(r"\b([A-Z][A-Z0-9_]*) (\d+)mW/(\d+)mW")
_RAIL_BARE = re.compile(r"\b([A-Z][A-Z0-9_]*) (\d+)/(\d+)(?=\s|$)")
_CORE = re.compile(r"^(\d+)%(?:@(\d+))?$")
_SENSOR_OFF = -256.0  # what a powered-down thermal zone reports
_NOT_RAILS = {"RAM", "SWAP", "IRAM", "NC"}  # "NC": an unconnected monitor channel

_UNITS = {"_mb": "MB", "_pct": "%", "_mhz": "MHz", "_c": "°C", "_mw": "mW", "_count": "count"}


#: the power sensor's period (s), not measured here: the INA3221 rail monitors convert
#: continuously, in milliseconds (Linux hwmon ina3221), so tegrastats' own interval (0.1 s
#: or more) limits a code window; 0.1 s, what radtrack assumed of every device before
#: listeners declared their periods (vocab/series.py Series.refresh_s)
REFRESH_S = 0.1


def _series(pattern: str, unit: str, role: str, scope: str, label: str, unit_text: str = "",
            description: str = "") -> Series:
    return Series(f"tegrastats/{pattern}", unit, role, scope, label, unit_text, description, "tegrastats")


# every key tegrastats may print, with what it is; the board is both the host and its GPU.
# Which rails make the board's total (docs/listeners.md "Jetson power rails"):
# - a module input rail (VDD_IN on TX2, Xavier NX, Orin NX/Nano; POM_5V_IN on TX1/Nano) is
#   the board's whole power; every other rail is a part of it, never added to it;
# - a module without one (AGX Xavier: GPU CPU SOC CV VDDRQ SYS5V; AGX Orin: VDD_GPU_SOC
#   VDD_CPU_CV VIN_SYS_5V0 VDDQ_VDD2_1V8AO) has its monitored rails side by side: their sum
#   is the board's power (``rails_sum_mw``, made here from each line); what no channel
#   monitors is left out, so it is a lower bound.
# The second figure of each rail is tegrastats' mean since it started: shown, never integrated.
INPUT_RAILS = ("vdd_in", "pom_5v_in")
RAILS_SUM = "tegrastats/power/rails_sum_mw"
SERIES = (
    _series("mem/ram_used_mb", "MB", "memory", "host", "board RAM used", "MB"),
    _series("mem/ram_total_mb", "MB", "memory", "host", "board RAM size", "MB"),
    _series("mem/swap_used_mb", "MB", "memory", "host", "board swap used", "MB"),
    _series("mem/swap_total_mb", "MB", "memory", "host", "board swap size", "MB"),
    _series("cpu/online_count", "count", "other", "host", "board CPU cores online", "cores"),
    _series("cpu<n>/util_pct", "%", "host_cpu", "host", "board core <n> CPU", "% of one core"),
    _series("cpu<n>/freq_mhz", "MHz", "clock", "host", "board core <n> clock", "MHz"),
    _series("gpu/util_pct", "%", "utilisation", "device", "GPU (GR3D) utilisation", "% of time"),
    _series("gpu/freq_mhz", "MHz", "clock", "device", "GPU (GR3D) clock", "MHz"),
    _series("emc/util_pct", "%", "utilisation", "host", "memory controller (EMC) utilisation",
            "% of time"),
    _series("emc/freq_mhz", "MHz", "clock", "host", "memory controller (EMC) clock", "MHz"),
    _series("temp/<sensor>_c", "°C", "temperature", "host", "board temperature <sensor>", "°C"),
    *(Series(f"tegrastats/power/{rail}{avg}_mw", "mW", "device_power", "device",
             f"board input power{' (running average)' if avg else ''}", "mW",
             f"the module's input rail {rail.upper()}: the whole board", "tegrastats",
             flavour="running_average" if avg else "", refresh_s=REFRESH_S)
      for rail in INPUT_RAILS for avg in ("_avg", "")),
    Series("tegrastats/power/rails_sum_mw", "mW", "device_power", "device",
           "board power (sum of its rails)", "mW",
           "a module without an input rail: the sum of its monitored rails", "tegrastats",
           refresh_s=REFRESH_S),
    Series("tegrastats/power/<rail>_avg_mw", "mW", "power_rail", "device",
           "rail <rail> power (running average)", "mW",
           "a supply rail, part of the board's power", "tegrastats", flavour="running_average"),
    _series("power/<rail>_mw", "mW", "power_rail", "device", "rail <rail> power", "mW",
            "a supply rail, part of the board's power"),
)


def _name(raw: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", raw.lower())


def parse_line(line: str) -> dict[str, float]:
    """Metric key -> value for one tegrastats line; {} for a line that carries no stats."""
    out: dict[str, float] = {}
    if m := _RAM.search(line):
        out["tegrastats/mem/ram_used_mb"], out["tegrastats/mem/ram_total_mb"] = float(m[1]), float(m[2])
    if m := _SWAP.search(line):
        out["tegrastats/mem/swap_used_mb"], out["tegrastats/mem/swap_total_mb"] = float(m[1]), float(m[2])
    if m := _CPU.search(line):
        online = 0
        for i, core in enumerate(c.strip() for c in m[1].split(",")):
            cm = _CORE.match(core)
            if cm is None:  # "off": the core is powered down, it has no load or clock
                continue
            online += 1
            out[f"tegrastats/cpu{i}/util_pct"] = float(cm[1])
            freq = cm[2] or m[2]  # per-core clock, or the shared one after "]@" (older L4T)
            if freq:
                out[f"tegrastats/cpu{i}/freq_mhz"] = float(freq)
        out["tegrastats/cpu/online_count"] = float(online)
    if m := _EMC.search(line):
        out["tegrastats/emc/util_pct"] = float(m[1])
        if m[2]:
            out["tegrastats/emc/freq_mhz"] = float(m[2])
    if m := _GR3D.search(line):
        out["tegrastats/gpu/util_pct"] = float(m[1])
        if m[2]:  # Orin prints one clock per GPC; they move together, so report the highest
            out["tegrastats/gpu/freq_mhz"] = max(float(f) for f in m[2].split(",") if f)
    for name, value in _TEMP.findall(line):
        if float(value) > _SENSOR_OFF:
            out[f"tegrastats/temp/{_name(name)}_c"] = float(value)
    rails = _RAIL_MW.findall(line) or [r for r in _RAIL_BARE.findall(line) if r[0] not in _NOT_RAILS]
    for name, now, avg in rails:
        if name in _NOT_RAILS:
            continue
        out[f"tegrastats/power/{_name(name)}_mw"] = float(now)
        out[f"tegrastats/power/{_name(name)}_avg_mw"] = float(avg)
    names = [_name(r[0]) for r in rails if r[0] not in _NOT_RAILS]
    if names and not any(n in INPUT_RAILS for n in names):  # no input rail: the board is their sum
        out[RAILS_SUM] = sum(out[f"tegrastats/power/{n}_mw"] for n in names)
    return out


def board_power(keys: list[str] | set[str]) -> str:
    """How the board's whole power is read from a line's keys (the ``tegrastats.board_power``
    tag): its input rail, the sum of its rails, or none (a board that prints no rails)."""
    found = [r for r in INPUT_RAILS if f"tegrastats/power/{r}_mw" in keys]
    if found:
        return f"{found[0].upper()} (the module's input rail; the other rails are parts of it)"
    rails = sorted(k.removeprefix("tegrastats/power/").removesuffix("_mw").upper() for k in keys
                   if k.startswith("tegrastats/power/") and not k.endswith("_avg_mw")
                   and k != RAILS_SUM)
    if rails:
        return f"sum of {'+'.join(rails)} (no input rail on this module: a lower bound)"
    return "none (this board prints no power rails)"


def unit_of(key: str) -> str:
    return next((u for suffix, u in _UNITS.items() if key.endswith(suffix)), "")


def _spec(key: str) -> MetricSpec:
    """A key's spec from :data:`SERIES`; one of a shape not foreseen keeps the unit of its suffix."""
    found = next((s for s in SERIES if s.match(key) is not None), None)
    return found.spec(key) if found is not None else MetricSpec(key, unit_of(key), "", "tegrastats")


class TegrastatsListener(Listener):
    name = "tegrastats"
    series = SERIES
    holds_start = True  # its power rails keep no history to read back to the run's start

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self._latest: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stream: CommandStream | None = None

    @classmethod
    def available(cls) -> Availability:
        if shutil.which("tegrastats") is None:
            return Availability(False, "no tegrastats on PATH (not a Jetson board)")
        return Availability(True)

    def _on_line(self, line: str) -> None:
        values = parse_line(line)
        if values:
            with self._lock:
                self._latest = values

    def probe(self) -> list[MetricSpec]:
        exe = shutil.which("tegrastats") or "tegrastats"
        ms = max(1, round(self.config.interval * 1000))
        self._stream = CommandStream([exe, "--interval", str(ms)], self._on_line)
        self._stream.start()
        deadline = time.monotonic() + max(5.0, 5 * self.config.interval)
        while not self._snapshot():
            if self._stream.ended.is_set() or time.monotonic() > deadline:
                tail = " | ".join(self._stream.tail) or "no output"
                raise RuntimeError(f"tegrastats printed no statistics: {tail}")
            time.sleep(0.02)
        return [_spec(k) for k in sorted(self._snapshot())]

    def _snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._latest)

    def sample(self) -> dict[str, float]:
        if self._stream is not None and self._stream.error is not None:
            raise RuntimeError(f"tegrastats line not understood: {self._stream.error}")
        if self._stream is not None and self._stream.ended.is_set():
            raise RuntimeError(f"tegrastats stopped: {' | '.join(self._stream.tail)}")
        return self._snapshot()

    def tags(self) -> dict[str, str]:
        # no per-process figure: co-located runs on a board share it whole (docs/listeners.md)
        return {"radtrack.listener.tegrastats.board_power": board_power(set(self._snapshot()))}

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
