"""NVML GPM (GPU Performance Monitoring, Hopper and newer): DCGM-style profiling
metrics with no DCGM install.

GPM metrics are computed between two hardware samples, so the sampler keeps the
previous sample of each device and swaps it with the new one on every read.
"""

from __future__ import annotations

from typing import Any

from radtrack.listeners.devices import GpuDevice
from radtrack.listeners.nvml import NA, nvml_query

_MIB = float(2**20)

# dcgm quantity -> (NVML_GPM_METRIC_* id, factor to the quantity's unit)
GPM_METRICS: dict[str, tuple[int, float]] = {
    "gr_engine_active_pct": (1, 1.0),  # GRAPHICS_UTIL
    "sm_active_pct": (2, 1.0),  # SM_UTIL
    "sm_occupancy_pct": (3, 1.0),  # SM_OCCUPANCY
    "tensor_active_pct": (5, 1.0),  # ANY_TENSOR_UTIL
    "dram_active_pct": (10, 1.0),  # DRAM_BW_UTIL
    "fp64_active_pct": (11, 1.0),
    "fp32_active_pct": (12, 1.0),
    "fp16_active_pct": (13, 1.0),
    "pcie_tx_bytes_per_s": (20, _MIB),  # GPM reports MiB/s
    "pcie_rx_bytes_per_s": (21, _MIB),
    "nvlink_rx_bytes_per_s": (60, _MIB),
    "nvlink_tx_bytes_per_s": (61, _MIB),
}


def gpm_supported(handle: Any) -> bool:
    """Whether the physical GPU behind ``handle`` offers GPM (False when NVML cannot say)."""
    support = nvml_query("nvmlGpmQueryDeviceSupport", handle)
    return support is not NA and bool(support.isSupportedDevice)


def _support_handle(dev: GpuDevice) -> Any:
    return dev.parent if dev.is_mig else dev.handle


def device_supported(dev: GpuDevice) -> bool:
    return gpm_supported(_support_handle(dev))


class GpmSampler:
    """Two GPM samples per device; :meth:`read` returns metrics since the previous read."""

    def __init__(self, devices: list[GpuDevice], quantities: list[str] | None = None):
        self.devices = devices
        self.quantities = list(quantities or GPM_METRICS)
        self._samples: dict[str, list[Any]] = {}  # scope -> [previous, spare]

    def _take(self, dev: GpuDevice, sample: Any) -> None:
        if dev.is_mig:
            nvml_query("nvmlGpmMigSampleGet", dev.parent, dev.gpu_instance_id, sample)
        else:
            nvml_query("nvmlGpmSampleGet", dev.handle, sample)

    def start(self) -> None:
        for dev in self.devices:
            pair = [nvml_query("nvmlGpmSampleAlloc"), nvml_query("nvmlGpmSampleAlloc")]
            self._samples[dev.scope] = pair
            self._take(dev, pair[0])

    def read(self) -> dict[str, dict[str, float]]:
        """scope -> quantity -> value over the time since the previous read."""
        import pynvml

        out: dict[str, dict[str, float]] = {}
        for dev in self.devices:
            prev, cur = self._samples[dev.scope]
            self._take(dev, cur)
            req = pynvml.c_nvmlGpmMetricsGet_t()
            req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            req.numMetrics = len(self.quantities)
            req.sample1, req.sample2 = prev, cur
            for i, q in enumerate(self.quantities):
                req.metrics[i].metricId = GPM_METRICS[q][0]
            got = nvml_query("nvmlGpmMetricsGet", req)
            self._samples[dev.scope] = [cur, prev]
            values: dict[str, float] = {}
            if got is not NA:
                for i, q in enumerate(self.quantities):
                    m = got.metrics[i]
                    if m.nvmlReturn == 0:
                        values[q] = float(m.value) * GPM_METRICS[q][1]
            out[dev.scope] = values
        return out

    def close(self) -> None:
        samples, self._samples = self._samples, {}
        for pair in samples.values():
            for s in pair:
                nvml_query("nvmlGpmSampleFree", s)
