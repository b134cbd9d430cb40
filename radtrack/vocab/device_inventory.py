"""What a GPU listener says of the host's GPUs before any run starts: its inventory.

A listener that reads GPUs declares, through ``Listener.inventory()`` (radtrack/listeners/base.py),
the GPUs of this host it can read (:class:`DeviceInfo`) and, on each, the environment
variable(s) that select it for a process. The launcher's inventory (radtrack/gpus.py) is the
union of these, so a row's ``Devices 0`` is placed on an AMD GPU as on an NVIDIA one: the
placement sets the variable the GPU's listener declares (radtrack/placement/plain.py), and
the sheet's checks read the same declaration (radtrack/sheet/host.py). What only one vendor
offers (NVIDIA's MPS, MIG, clock locks and power limits) is asked of ``vendor``.

Pure: data, no import of anything of radtrack's.
"""

from __future__ import annotations

from dataclasses import dataclass

NVIDIA = "NVIDIA"
#: what CUDA reads; HIP on an AMD GPU honours it too (ROCm's HIP environment variables)
CUDA_VISIBLE = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU of this host, as the listener that reads it numbers and names it."""

    index: int  # the host's index of it in its vendor's order (nvidia-smi's, amdsmi's)
    uuid: str  # its unique id as its vendor's library gives it ("" when it gives none)
    name: str  # its model ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X")
    vendor: str  # "NVIDIA", "AMD": what vendor-only features (MPS, MIG, clocks) are asked of
    listener: str  # the registered name of the listener that reported it ("smi", "amdsmi")
    #: the variables that select GPUs for a process, in this vendor's runtime: the first is
    #: the one radtrack sets from a row's Devices; any of them in a row's Env conflicts with it
    visibility: tuple[str, ...] = (CUDA_VISIBLE,)
    memory_mib: float | None = None  # its memory size, where the library says

    @property
    def describe(self) -> str:
        """'GPU 0 (AMD Instinct MI300X, read by amdsmi)': for messages naming it."""
        return f"GPU {self.index} ({self.name or self.vendor + ' GPU'}, read by {self.listener})"

    @property
    def visible_env(self) -> str:
        """The variable radtrack sets to give a row this GPU."""
        return self.visibility[0] if self.visibility else CUDA_VISIBLE
