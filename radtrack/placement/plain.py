"""Plain placement: rows see their GPUs through CUDA_VISIBLE_DEVICES and time-share them."""

from __future__ import annotations

from radtrack.placement.base import Part
from radtrack.spec import RunSpec

# nvidia-smi numbers GPUs in PCI bus order; CUDA's default order ("fastest first") may
# differ on mixed hosts, so a sheet's "1" would otherwise be another GPU for CUDA.
DEVICE_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


class PlainPlacement(Part):
    def __init__(self, specs: list[RunSpec]):
        self.rows = [s for s in specs if s.collocation_kind == "plain"]

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

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        if spec.collocation_kind != "plain" or not spec.devices:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(spec.devices), **DEVICE_ORDER}
