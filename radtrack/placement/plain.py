"""Plain placement: rows see their GPUs through the variable their vendor's runtime reads
(CUDA_VISIBLE_DEVICES for an NVIDIA GPU, ROCR_VISIBLE_DEVICES for an AMD one: whichever the
GPU's listener declares, radtrack/vocab/device_inventory.py) and time-share them."""

from __future__ import annotations

from radtrack import device_entries
from radtrack import gpus as gpus_mod
from radtrack.placement.base import Part
from radtrack.spec import RunSpec
from radtrack.vocab.device_inventory import CUDA_VISIBLE

# nvidia-smi numbers GPUs in PCI bus order; CUDA's default order ("fastest first") may
# differ on mixed hosts, so a sheet's "1" would otherwise be another GPU for CUDA.
DEVICE_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


class PlainPlacement(Part):
    def __init__(self, specs: list[RunSpec], host: list[gpus_mod.Gpu] | None = None):
        self.rows = [s for s in specs if s.collocation_kind == "plain"]
        self.host = host or []

    def describe(self) -> list[str]:
        steps = []
        users: dict[str, list[str]] = {}
        for s in self.rows:
            for d in s.devices:
                users.setdefault(d, []).append(s.letter)
        for device, letters in users.items():
            if len(letters) > 1:
                steps.append(f"GPU {device}: rows {', '.join(letters)} time-share it (plain)")
        return steps

    def variable_of(self, device: str) -> str:
        """The variable that gives a process ``device``: its listener's declared one; a GPU
        not in the inventory (a run on CPU, --allow-cpu-fallback) gets CUDA's, as always."""
        found = gpus_mod.resolve(device, self.host)
        return found[0].visibility[0] if found and found[0].visibility else CUDA_VISIBLE

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        if spec.collocation_kind != "plain" or not spec.devices:
            return {}
        by_variable: dict[str, list[str]] = {}
        for d in spec.devices:
            by_variable.setdefault(self.variable_of(d), []).append(d)
        env = {name: ",".join(entries) for name, entries in by_variable.items()}
        if CUDA_VISIBLE in env:
            return {**env, **DEVICE_ORDER}
        # the row's listeners take their devices from CUDA_VISIBLE_DEVICES, else from here
        return {**env, device_entries.PLACED_ENV: ",".join(spec.devices)}
