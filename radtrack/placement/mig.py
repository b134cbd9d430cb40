"""MIG placement: a GPU instance (with its default compute instance) per MIG row.

radtrack creates the instances a workload needs, runs each row on its own MIG device,
and destroys exactly the instances it created; instances it did not create are never
touched, and MIG mode itself is never changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from radtrack import gpus as gpus_mod
from radtrack.errors import PlacementError
from radtrack.placement.base import Log, Part, check, output, run
from radtrack.spec import RunSpec
from radtrack.vocab import schema

SMI = gpus_mod.SMI
_CREATED_RE = re.compile(r"created GPU instance ID\s+(\d+) on GPU\s+(\d+)", re.IGNORECASE)
PENDING_UUID = "MIG-<created at run time>"


def parse_created_instance(text: str) -> int | None:
    """The GPU-instance id from ``nvidia-smi mig -cgi ... -C`` output, None if none was created."""
    m = _CREATED_RE.search(text)
    return int(m[1]) if m else None


@dataclass
class Instance:
    spec: RunSpec
    gpu: int
    profile: str
    gi: int | None = None
    uuid: str | None = None
    exists: bool = False  # radtrack created it and has not destroyed it yet


class MigInstances(Part):
    def __init__(self, specs: list[RunSpec], log: Log, host: list[gpus_mod.Gpu]):
        self.log = log
        self.instances: list[Instance] = []
        for s in specs:
            if s.collocation_kind != "mig":
                continue
            if len(s.devices) != 1:
                raise PlacementError(f"row {s.letter}: MIG needs exactly one GPU, got "
                                     f"{'+'.join(s.devices) or 'none'}")
            device = s.devices[0]
            index = int(device) if device.isdigit() else gpus_mod.resolve_index(device, host)
            if index is None:
                raise PlacementError(f"row {s.letter}: GPU {device} is not on this host")
            self.instances.append(Instance(s, index, s.collocation))

    def _find(self, spec: RunSpec) -> Instance:
        return next(i for i in self.instances if i.spec is spec)

    def describe(self) -> list[str]:
        steps = []
        for i in self.instances:
            steps.append(f"create MIG instance {i.profile} on GPU {i.gpu} for row {i.spec.letter}:"
                         f" {SMI} mig -i {i.gpu} -cgi {i.profile} -C")
        if self.instances:
            steps.append(f"after the workload: destroy exactly those instances ({SMI} mig -i "
                         "<gpu> -gi <id> -dci, then -dgi)")
        return steps

    def setup(self) -> None:
        for inst in self.instances:
            before = {d.uuid for d in gpus_mod.mig_devices() if d.gpu == inst.gpu}
            proc = run([SMI, "mig", "-i", str(inst.gpu), "-cgi", inst.profile, "-C"])
            # Recorded before checking the exit code: "-C" can create the GPU instance and
            # then fail on the compute instance, and that GPU instance must still go.
            inst.gi = parse_created_instance(proc.stdout)
            inst.exists = inst.gi is not None
            what = f"creating MIG instance {inst.profile} on GPU {inst.gpu}"
            check(proc, what)
            if inst.gi is None:
                raise PlacementError(f"{what}: no GPU instance id in the output: {output(proc)}")
            new = [d.uuid for d in gpus_mod.mig_devices()
                   if d.gpu == inst.gpu and d.uuid not in before]
            if len(new) != 1:
                raise PlacementError(f"{what}: expected one new MIG device in '{SMI} -L', found "
                                     f"{len(new)} ({', '.join(new) or 'none'})")
            inst.uuid = new[0]
            self.log(f"MIG instance {inst.profile} created on GPU {inst.gpu}: GPU instance "
                     f"{inst.gi}, {inst.uuid} (row {inst.spec.letter})")

    def teardown(self) -> list[str]:
        problems = []
        for inst in reversed(self.instances):
            if not inst.exists:
                continue
            base = [SMI, "mig", "-i", str(inst.gpu), "-gi", str(inst.gi)]
            manual = f"sudo {' '.join(base)} -dci && sudo {' '.join(base)} -dgi"
            try:
                dci = run([*base, "-dci"])
                # A compute instance that is already gone must not keep its GPU instance.
                if dci.returncode != 0 and "not found" not in output(dci).lower():
                    check(dci, f"destroying the compute instances of GPU instance {inst.gi}")
                check(run([*base, "-dgi"]), f"destroying GPU instance {inst.gi} on GPU {inst.gpu}")
            except PlacementError as exc:
                problems.append(f"{exc}; destroy it by hand: {manual}")
                continue
            self.log(f"MIG GPU instance {inst.gi} on GPU {inst.gpu} destroyed")
            inst.exists = False
        return problems

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        if spec.collocation_kind != "mig":
            return {}
        inst = self._find(spec)
        if not inst.exists or inst.uuid is None:
            raise PlacementError(f"row {spec.letter}: its MIG instance does not exist (the "
                                 "placement was not entered or was already torn down)")
        return {"CUDA_VISIBLE_DEVICES": inst.uuid}

    def planned_env(self, spec: RunSpec) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": PENDING_UUID} if spec.collocation_kind == "mig" else {}

    def tags_for(self, spec: RunSpec) -> dict[str, str]:
        if spec.collocation_kind != "mig":
            return {}
        inst = self._find(spec)
        tags = {schema.MIG_PROFILE: inst.profile}
        if inst.uuid:
            tags[schema.MIG_UUID] = inst.uuid
            tags[schema.MIG_GPU_INSTANCE] = str(inst.gi)
        return tags
