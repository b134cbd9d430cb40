"""One driver call where pynvml makes two, for the buffers smi reads every second.

pynvml's ``nvmlDeviceGetSamples`` and ``nvmlDeviceGetProcessUtilization`` first ask the
driver how many entries there are (a call with no buffer), then ask again to fill one. On
an H100 under load each ask costs about as much as the other (the two together: 0.5-0.6 ms
for the power sample ring, 1.8-2.2 ms for the per-process readings, measured by
benchmarks/sampler_profile.py). These do the same with one call into a buffer kept
between reads, sized from the driver's own answer:

- the power sample ring: its depth (the count a call with no buffer and timestamp 0
  returns, 119 on an H100) is asked once per device; a read that fills the buffer to the
  last entry, which a ring that deep never should, is repeated pynvml's way, so no sample
  is ever cut off;
- per-process utilisation: a buffer that is too small is answered NVML_ERROR_INSUFFICIENT_SIZE
  with the count it needs; it is grown to that and the call repeated.

Results are exactly pynvml's (the same structures, errors raised as pynvml raises them).
Where ``pynvml``'s function is not pynvml's own (the test doubles replace it), that
function is called instead: :func:`replacement` says which.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any


def _ours(fn: Any, pynvml: Any) -> bool:
    """Whether ``fn`` is pynvml's own function (not a double put in its place)."""
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename == getattr(pynvml, "__file__", None)


class _Samples:
    """nvmlDeviceGetSamples with one call a read (see the module docstring)."""

    def __init__(self) -> None:
        self.depth: dict[tuple[int, int], int] = {}  # (handle address, sampling type) -> ring depth

    def __call__(self, handle: Any, kind: int, since_us: int) -> tuple[int, list[Any]]:
        import pynvml

        fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetSamples")
        key = (ctypes.cast(handle, ctypes.c_void_p).value or 0, int(kind))
        value_type = pynvml._nvmlValueType_t()
        count = ctypes.c_uint(0)
        if key not in self.depth:
            ret = fn(handle, pynvml._nvmlSamplingType_t(kind), ctypes.c_ulonglong(0),
                     ctypes.byref(value_type), ctypes.byref(count), None)
            if ret != pynvml.NVML_SUCCESS:
                raise pynvml.NVMLError(ret)
            self.depth[key] = max(int(count.value), 1)
        depth = self.depth[key]
        buf = (pynvml.c_nvmlSample_t * depth)()
        count.value = depth
        ret = fn(handle, pynvml._nvmlSamplingType_t(kind), ctypes.c_ulonglong(since_us),
                 ctypes.byref(value_type), ctypes.byref(count), buf)
        if ret == pynvml.NVML_ERROR_INSUFFICIENT_SIZE or (ret == pynvml.NVML_SUCCESS and count.value >= depth):
            self.depth.pop(key)  # deeper than it said: ask again, pynvml's way this once
            return _unwrapped(pynvml.nvmlDeviceGetSamples)(handle, kind, since_us)
        if ret != pynvml.NVML_SUCCESS:
            raise pynvml.NVMLError(ret)
        return value_type.value, buf[0:count.value]


class _ProcessUtilization:
    """nvmlDeviceGetProcessUtilization with one call a read (see the module docstring)."""

    def __init__(self) -> None:
        self.size = 64

    def __call__(self, handle: Any, since_us: int) -> list[Any]:
        import pynvml

        fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
        for _ in range(4):
            buf = (pynvml.c_nvmlProcessUtilizationSample_t * self.size)()
            count = ctypes.c_uint(self.size)
            ret = fn(handle, buf, ctypes.byref(count), ctypes.c_ulonglong(since_us))
            if ret == pynvml.NVML_SUCCESS:
                return buf[0:count.value]
            if ret != pynvml.NVML_ERROR_INSUFFICIENT_SIZE:
                raise pynvml.NVMLError(ret)
            self.size = max(2 * self.size, int(count.value))
        return _unwrapped(pynvml.nvmlDeviceGetProcessUtilization)(handle, since_us)


def _unwrapped(fn: Any) -> Any:
    return getattr(fn, "__wrapped__", fn)  # a timing wrapper (benchmarks) keeps pynvml's own


_DIRECT: dict[str, Callable[..., Any]] = {
    "nvmlDeviceGetSamples": _Samples(),
    "nvmlDeviceGetProcessUtilization": _ProcessUtilization(),
}


def replacement(func: str, fn: Any, pynvml: Any) -> Any:
    """The one-call version of pynvml's ``func`` where there is one and ``fn`` is pynvml's
    own, else ``fn``."""
    direct = _DIRECT.get(func)
    if direct is None or not _ours(_unwrapped(fn), pynvml):
        return fn
    return direct
