"""Clock locks and power limits for DVFS studies, restored after the workload."""

from __future__ import annotations

from radtrack import gpus as gpus_mod
from radtrack.errors import PlacementError
from radtrack.placement.base import Log, Part, check, output, run
from radtrack.spec import RunSpec

SMI = gpus_mod.SMI


def clock_range(clocks: str) -> tuple[int, int]:
    """RunSpec.clocks ('1410' or '1200,1980', MHz) -> (min, max)."""
    values = [int(v) for v in clocks.split(",")]
    return values[0], values[-1]


class GpuSettings(Part):
    def __init__(self, specs: list[RunSpec], log: Log, host: list[gpus_mod.Gpu]):
        self.log = log
        self.clocks: dict[str, tuple[int, int]] = {}
        self.power: dict[str, float] = {}
        for s in specs:
            for device in s.devices:
                # One GPU may be named by index in one row and by UUID in another.
                index = gpus_mod.resolve_index(device, host)
                gpu = str(index) if index is not None else device
                if s.clocks:
                    _agree(self.clocks, gpu, clock_range(s.clocks), "Clocks")
                if s.power_limit is not None:
                    _agree(self.power, gpu, s.power_limit, "PowerLimit")
        self.locked: set[str] = set()
        self.previous_power: dict[str, str] = {}

    def describe(self) -> list[str]:
        steps = []
        for gpu, (lo, hi) in self.clocks.items():
            steps.append(f"lock SM clocks of GPU {gpu} to {lo}-{hi} MHz: {SMI} -i {gpu} -lgc "
                         f"{lo},{hi} (reset afterwards with -rgc)")
        for gpu, watts in self.power.items():
            steps.append(f"set the power limit of GPU {gpu} to {watts:g} W: {SMI} -i {gpu} -pl "
                         f"{watts:g} (the previous limit is restored afterwards)")
        return steps

    def setup(self) -> None:
        for gpu, watts in self.power.items():
            query = run([SMI, "-i", gpu, "--query-gpu=power.limit", "--format=csv,noheader,nounits"])
            check(query, f"reading the power limit of GPU {gpu}")
            previous = query.stdout.strip()
            try:
                float(previous)
            except ValueError:
                raise PlacementError(f"GPU {gpu} reports no power limit ({output(query)}); "
                                     "it cannot be changed here") from None
            check(run([SMI, "-i", gpu, "-pl", f"{watts:g}"]),
                  f"setting the power limit of GPU {gpu} to {watts:g} W")
            self.previous_power[gpu] = previous
            self.log(f"GPU {gpu}: power limit {watts:g} W (was {previous} W)")
        for gpu, (lo, hi) in self.clocks.items():
            check(run([SMI, "-i", gpu, "-lgc", f"{lo},{hi}"]),
                  f"locking the SM clocks of GPU {gpu} to {lo}-{hi} MHz")
            self.locked.add(gpu)
            self.log(f"GPU {gpu}: SM clocks locked to {lo}-{hi} MHz")

    def teardown(self) -> list[str]:
        problems = []
        for gpu in sorted(self.locked):
            try:
                check(run([SMI, "-i", gpu, "-rgc"]), f"resetting the SM clocks of GPU {gpu}")
            except PlacementError as exc:
                problems.append(f"{exc}; reset them by hand: sudo {SMI} -i {gpu} -rgc")
                continue
            self.locked.discard(gpu)
            self.log(f"GPU {gpu}: SM clocks reset")
        for gpu, previous in sorted(self.previous_power.items()):
            try:
                check(run([SMI, "-i", gpu, "-pl", previous]),
                      f"restoring the power limit of GPU {gpu} to {previous} W")
            except PlacementError as exc:
                problems.append(f"{exc}; restore it by hand: sudo {SMI} -i {gpu} -pl {previous}")
                continue
            del self.previous_power[gpu]
            self.log(f"GPU {gpu}: power limit restored to {previous} W")
        return problems


def _agree(settings: dict, gpu: str, value: object, column: str) -> None:
    if settings.setdefault(gpu, value) != value:
        raise PlacementError(f"rows of this workload ask for different {column} on GPU {gpu}: "
                             f"{settings[gpu]} and {value}")
