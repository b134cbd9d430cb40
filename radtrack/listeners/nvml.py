"""One gated door to NVML: lazy init, a "not available" value instead of NotSupported.

Every NVML call of the GPU listeners goes through :func:`nvml_query`, so a device or
driver that lacks a reading degrades to :data:`NA` (recorded once as unsupported by
the listener) instead of an exception in the sampling loop. Functions are looked up
on the ``pynvml`` module at call time, which also lets tests replace them with
autospec doubles.
"""

from __future__ import annotations

import logging
import threading
from functools import cache
from typing import Any, Final

from radtrack.listeners.base import Availability, DeviceInfo
from radtrack.vocab.device_inventory import NVIDIA

log = logging.getLogger(__name__)


class _NotAvailable:
    """The value of a reading NVML does not offer; falsy, and never a number."""

    _instance: _NotAvailable | None = None

    def __new__(cls) -> _NotAvailable:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NA"


NA: Final = _NotAvailable()

_lock = threading.Lock()
_initialised = False
_missing_logged: set[str] = set()


def _pynvml() -> Any:
    import pynvml

    return pynvml


def _na_errors(pynvml: Any) -> tuple[type[BaseException], ...]:
    # NotSupported: the device lacks the reading; FunctionNotFound: the driver is older
    # than the binding; NoPermission: readable only by root (e.g. some counters in VMs).
    return (pynvml.NVMLError_NotSupported, pynvml.NVMLError_FunctionNotFound,
            pynvml.NVMLError_NoPermission)


def ensure_init() -> None:
    """Initialise NVML once per process; raises the NVMLError when it cannot start."""
    global _initialised
    if _initialised:  # every reading passes here: no lock once NVML is up
        return
    with _lock:
        if not _initialised:
            _pynvml().nvmlInit()
            _initialised = True


def nvml_query(func: str, *args: Any) -> Any:
    """Call ``pynvml.<func>(*args)``; NA when the function or the reading is not there.

    Errors other than "not supported" (a lost GPU, an unknown error) propagate: they
    mean the reading is broken, not absent, and must not be hidden.
    """
    pynvml = _pynvml()
    fn = getattr(pynvml, func, None)
    if fn is None:
        if func not in _missing_logged:
            _missing_logged.add(func)
            log.warning("pynvml has no %s (nvidia-ml-py too old); its reading is skipped", func)
        return NA
    ensure_init()
    try:
        return fn(*args)
    except _na_errors(pynvml) as exc:
        if isinstance(exc, pynvml.NVMLError_FunctionNotFound) and func not in _missing_logged:
            _missing_logged.add(func)
            log.warning("the NVIDIA driver does not implement %s; its reading is skipped", func)
        return NA


@cache
def nvml_available() -> Availability:
    """Whether NVML can be used here, with the reason when not (checked once per process)."""
    try:
        pynvml = _pynvml()
    except ImportError:
        return Availability(False, "pynvml is not installed (pip install nvidia-ml-py)")
    try:
        ensure_init()
    except pynvml.NVMLError_LibraryNotFound:
        return Availability(False, "no NVML library (libnvidia-ml.so): NVIDIA driver not installed")
    except pynvml.NVMLError_DriverNotLoaded:
        return Availability(False, "NVIDIA driver not loaded")
    except pynvml.NVMLError as exc:
        return Availability(False, f"NVML failed to start: {exc}")
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as exc:
        return Availability(False, f"NVML cannot count GPUs: {exc}")
    if count == 0:
        return Availability(False, "no NVIDIA GPU found by NVML")
    return Availability(True)


def host_gpus(listener: str) -> list[DeviceInfo]:
    """Every NVIDIA GPU of this host in NVML's order (nvidia-smi's: PCI bus), with its UUID,
    name and memory size; [] where NVML cannot start or count them."""
    if not nvml_available():
        return []
    pynvml = _pynvml()
    out = []
    try:
        for index in range(int(pynvml.nvmlDeviceGetCount())):
            handle = nvml_query("nvmlDeviceGetHandleByIndex", index)
            memory = nvml_query("nvmlDeviceGetMemoryInfo", handle)
            out.append(DeviceInfo(index=index, uuid=text(nvml_query("nvmlDeviceGetUUID", handle)),
                                  name=text(nvml_query("nvmlDeviceGetName", handle)), vendor=NVIDIA,
                                  listener=listener,
                                  memory_mib=None if memory is NA else memory.total / 2**20))
    except pynvml.NVMLError:  # a GPU lost while counting: no inventory rather than a wrong one
        return []
    return out


def reset() -> None:
    """Forget the init state and cached availability (after fork, or between tests)."""
    global _initialised
    with _lock:
        _initialised = False
    _missing_logged.clear()
    nvml_available.cache_clear()


def text(value: Any) -> str:
    """NVML strings arrive as bytes from older bindings and str from newer ones."""
    return value.decode() if isinstance(value, bytes) else str(value)
