"""dcgm: profiling metrics (SM active/occupancy, tensor and FP pipes, DRAM, PCIe, NVLink).

Two backends give the same keys: ``dcgmi dmon`` when DCGM is installed (one long-running
subprocess, parsed on a reader thread), else NVML GPM on Hopper and newer GPUs
(:mod:`radtrack.listeners.gpm`). The ``radtrack.listener.dcgm.backend`` tag says which.
With dcgmi, field sets are tried from the richest down, because older GPUs cannot
watch every profiling field at once.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping

from radtrack.listeners.base import (
    HOST_SAMPLER,
    Availability,
    Listener,
    ListenerConfig,
    MetricSpec,
    Series,
)
from radtrack.listeners.cmdstream import CommandStream
from radtrack.listeners.devices import GpuDevice, run_devices
from radtrack.listeners.gpm import GPM_METRICS, GpmSampler, device_supported, gpm_supported
from radtrack.listeners.nvml import NA, nvml_available, nvml_query

# DCGM field id -> (quantity, factor to the quantity's unit); 1001-1008 are ratios 0..1
DCGM_FIELDS: dict[int, tuple[str, float]] = {
    1001: ("gr_engine_active_pct", 100.0),
    1002: ("sm_active_pct", 100.0),
    1003: ("sm_occupancy_pct", 100.0),
    1004: ("tensor_active_pct", 100.0),
    1005: ("dram_active_pct", 100.0),
    1006: ("fp64_active_pct", 100.0),
    1007: ("fp32_active_pct", 100.0),
    1008: ("fp16_active_pct", 100.0),
    1009: ("pcie_tx_bytes_per_s", 1.0),
    1010: ("pcie_rx_bytes_per_s", 1.0),
    1011: ("nvlink_tx_bytes_per_s", 1.0),
    1012: ("nvlink_rx_bytes_per_s", 1.0),
}
FIELD_SETS: list[list[int]] = [
    list(DCGM_FIELDS),
    [1001, 1002, 1003, 1004, 1005, 1009, 1010],
    [1002, 1003, 1004, 1005],
    [1002],
]
DESCRIPTIONS = {
    "gr_engine_active_pct": "time the graphics/compute engine was active",
    "sm_active_pct": "cycles an SM had at least one warp resident, averaged over SMs",
    "sm_occupancy_pct": "resident warps relative to the maximum, averaged over SMs",
    "tensor_active_pct": "cycles the tensor pipes were active",
    "dram_active_pct": "cycles device memory was sending or receiving data",
    "fp64_active_pct": "cycles the FP64 pipe was active",
    "fp32_active_pct": "cycles the FP32 pipe was active",
    "fp16_active_pct": "cycles the FP16 pipe was active",
    "pcie_tx_bytes_per_s": "PCIe bytes sent, headers included",
    "pcie_rx_bytes_per_s": "PCIe bytes received, headers included",
    "nvlink_tx_bytes_per_s": "NVLink bytes sent, all links",
    "nvlink_rx_bytes_per_s": "NVLink bytes received, all links",
}

# quantity -> (role, label, unit as a reader needs it); every key is a whole device's
# (a MIG instance's through GPM); docs/metrics.md is checked against it
MEANINGS: dict[str, tuple[str, str, str]] = {
    "gr_engine_active_pct": ("utilisation", "GPU graphics/compute engine active", "% of time"),
    "sm_active_pct": ("utilisation", "GPU SM active", "% of SM cycles"),
    "sm_occupancy_pct": ("utilisation", "GPU SM occupancy", "% of the maximum resident warps"),
    "tensor_active_pct": ("utilisation", "GPU tensor pipes active", "% of SM cycles"),
    "dram_active_pct": ("utilisation", "GPU memory (DRAM) active", "% of cycles"),
    "fp64_active_pct": ("utilisation", "GPU FP64 pipe active", "% of SM cycles"),
    "fp32_active_pct": ("utilisation", "GPU FP32 pipe active", "% of SM cycles"),
    "fp16_active_pct": ("utilisation", "GPU FP16 pipe active", "% of SM cycles"),
    "pcie_tx_bytes_per_s": ("io", "GPU PCIe sent", "B/s"),
    "pcie_rx_bytes_per_s": ("io", "GPU PCIe received", "B/s"),
    "nvlink_tx_bytes_per_s": ("io", "GPU NVLink sent", "B/s"),
    "nvlink_rx_bytes_per_s": ("io", "GPU NVLink received", "B/s"),
}
SERIES = tuple(Series(f"dcgm/gpu<i>/{q}", "B/s" if q.endswith("_bytes_per_s") else "%", role,
                      "device", label, text, DESCRIPTIONS[q])
               for q, (role, label, text) in MEANINGS.items())
_SERIES = {s.pattern.rsplit("/", 1)[1]: s for s in SERIES}


class DcgmiError(RuntimeError):
    """dcgmi printed an error (no host engine, fields not supported, ...)."""


class DmonParser:
    """Rows of ``dcgmi dmon -e <fields>``: ``GPU <id>  <v1> <v2> ...`` (``N/A`` for blanks)."""

    def __init__(self, fields: list[int]):
        self.fields = fields

    def parse(self, line: str) -> tuple[int, dict[int, float]] | None:
        """(gpu id, field id -> value) for a data row; None for headers and blank lines."""
        s = line.strip()
        if not s:
            return None
        if s.lower().startswith("error"):
            raise DcgmiError(s)
        if s.startswith("#"):
            columns = s.lstrip("#").split()[1:]  # after "Entity"
            if len(columns) != len(self.fields):
                raise DcgmiError(f"dcgmi dmon printed {len(columns)} columns for "
                                 f"{len(self.fields)} fields: {s!r}")
            return None
        parts = s.split()
        if parts[0] != "GPU" or len(parts) < 2 or not parts[1].isdigit():
            return None  # the "ID" line under the header, other entity kinds
        raw = parts[2:]
        if len(raw) != len(self.fields):
            raise DcgmiError(f"dcgmi dmon row has {len(raw)} values for {len(self.fields)} fields: {s!r}")
        values = {}
        for fid, text in zip(self.fields, raw, strict=True):
            try:
                values[fid] = float(text)
            except ValueError:
                continue  # N/A: DCGM has no value for this interval
        return int(parts[1]), values


class DcgmiBackend:
    """``dcgmi dmon`` as a subprocess; :meth:`latest` is the last row seen per GPU."""

    def __init__(self, dcgmi: str, fields: list[int], gpu_ids: list[int], delay_ms: int):
        self.fields = fields
        self._parser = DmonParser(fields)
        self._latest: dict[int, dict[int, float]] = {}
        self._lock = threading.Lock()
        self._first = threading.Event()
        argv = [dcgmi, "dmon", "-e", ",".join(map(str, fields)), "-d", str(delay_ms)]
        if gpu_ids:
            argv += ["-i", ",".join(map(str, gpu_ids))]
        self.stream = CommandStream(argv, self._on_line)

    def _on_line(self, line: str) -> None:
        row = self._parser.parse(line)
        if row is not None:
            with self._lock:
                self._latest[row[0]] = row[1]
            self._first.set()

    def start(self, timeout: float) -> None:
        """Start and wait for the first data row; DcgmiError when dcgmi refuses."""
        self.stream.start()
        deadline = time.monotonic() + timeout
        while not self._first.is_set():
            if self.stream.error is not None:
                raise DcgmiError(str(self.stream.error))
            if self.stream.ended.is_set() or time.monotonic() > deadline:
                tail = " | ".join(line for line in self.stream.tail if line.strip()) or "no output"
                why = "exited" if self.stream.ended.is_set() else f"printed no row within {timeout:.0f} s"
                raise DcgmiError(f"dcgmi dmon {why}: {tail}")
            self._first.wait(0.05)

    def latest(self) -> dict[int, dict[int, float]]:
        if self.stream.error is not None:
            raise DcgmiError(str(self.stream.error))
        if self.stream.ended.is_set():
            raise DcgmiError(f"dcgmi dmon stopped (exit {self.stream.returncode}): "
                             f"{' | '.join(self.stream.tail)}")
        with self._lock:
            return {gpu: dict(v) for gpu, v in self._latest.items()}

    def close(self) -> None:
        self.stream.close()


def _any_gpm_gpu() -> bool:
    count = nvml_query("nvmlDeviceGetCount")
    return count is not NA and any(
        gpm_supported(nvml_query("nvmlDeviceGetHandleByIndex", i)) for i in range(int(count)))


class DcgmListener(Listener):
    name = "dcgm"
    series = SERIES

    def __init__(self, config: ListenerConfig):
        super().__init__(config)
        self.backend: str = ""
        self._devices: list[GpuDevice] = []
        self._dcgmi: DcgmiBackend | None = None
        self._gpm: GpmSampler | None = None
        self._quantities: list[str] = []
        self._unsupported: list[str] = []
        self._notes: list[str] = []

    @classmethod
    def available(cls) -> Availability:
        nvml = nvml_available()
        if not nvml:
            return Availability(False, f"needs NVML: {nvml.reason}")
        if shutil.which("dcgmi") or _any_gpm_gpu():
            return Availability(True)
        return Availability(False, "no dcgmi on PATH and NVML GPM is not supported by these GPUs "
                                   "(GPM needs Hopper or newer)")

    @classmethod
    def shared_sampler(cls, env: Mapping[str, str]) -> str | None:
        """NVML GPM runs in-process and can share smi's NVML session; with ``dcgmi`` on
        PATH the readings come from its own subprocess, which gains nothing from sharing,
        so dcgm keeps a process of its own."""
        return None if shutil.which("dcgmi", path=env.get("PATH")) else HOST_SAMPLER

    def probe(self) -> list[MetricSpec]:
        self._devices = run_devices(self.config.devices)
        dcgmi = shutil.which("dcgmi")
        if dcgmi and not any(d.is_mig for d in self._devices):
            self._start_dcgmi(dcgmi)
        elif dcgmi:
            self._notes.append("dcgmi skipped: MIG instances are read through GPM")
        if not self.backend:
            self._start_gpm()
        specs = []
        for dev in self._devices:
            for q in self._quantities:
                source = (f"dcgmi dmon -e {_field_of(q)}" if self.backend == "dcgmi"
                          else f"nvmlGpmMetricsGet(metric {GPM_METRICS[q][0]})")
                specs.append(_SERIES[q].spec(f"dcgm/{dev.scope}/{q}", source=source))
        return specs

    def _start_dcgmi(self, dcgmi: str) -> None:
        delay_ms = max(100, round(self.config.interval * 1000))
        gpu_ids = [d.index for d in self._devices if d.index is not None]
        for fields in FIELD_SETS:
            backend = DcgmiBackend(dcgmi, fields, gpu_ids, delay_ms)
            try:
                backend.start(timeout=max(5.0, 5 * self.config.interval))
            except (DcgmiError, OSError) as exc:
                backend.close()
                self._notes.append(f"fields {','.join(map(str, fields))}: {exc}")
                continue
            self._dcgmi, self.backend = backend, "dcgmi"
            self._quantities = [DCGM_FIELDS[f][0] for f in fields]
            self._unsupported = [DCGM_FIELDS[f][0] for f in DCGM_FIELDS if f not in fields]
            return

    def _start_gpm(self) -> None:
        if not self._devices or not all(device_supported(d) for d in self._devices):
            raise RuntimeError("no usable backend: " + ("; ".join(self._notes) or "no dcgmi on PATH")
                               + "; NVML GPM is not supported on these devices")
        sampler = GpmSampler(self._devices)
        sampler.start()
        time.sleep(min(self.config.interval, 0.1))  # GPM needs two samples some time apart
        first = sampler.read()
        offered = set(GPM_METRICS)
        for values in first.values():
            offered &= set(values)
        self._quantities = [q for q in GPM_METRICS if q in offered]
        self._unsupported = [q for q in GPM_METRICS if q not in offered]
        sampler.quantities = self._quantities
        self._gpm, self.backend = sampler, "gpm"

    def tags(self) -> dict[str, str]:
        out = {"radtrack.listener.dcgm.backend": self.backend,
               "radtrack.listener.dcgm.unsupported": ",".join(self._unsupported)}
        if self._notes:
            out["radtrack.listener.dcgm.notes"] = "; ".join(self._notes)[:4000]
        return out

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self._dcgmi is not None:
            rows = self._dcgmi.latest()
            for dev in self._devices:
                for fid, value in rows.get(dev.index if dev.index is not None else -1, {}).items():
                    quantity, factor = DCGM_FIELDS[fid]
                    out[f"dcgm/{dev.scope}/{quantity}"] = value * factor
        elif self._gpm is not None:
            for scope, values in self._gpm.read().items():
                out.update({f"dcgm/{scope}/{q}": v for q, v in values.items()})
        return out

    def close(self) -> None:
        if self._dcgmi is not None:
            self._dcgmi.close()
        if self._gpm is not None:
            self._gpm.close()
            self._gpm = None


def _field_of(quantity: str) -> int:
    return next(f for f, (q, _) in DCGM_FIELDS.items() if q == quantity)
