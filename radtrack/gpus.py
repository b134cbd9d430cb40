"""Host GPU inventory: NVIDIA's through ``nvidia-smi`` (so a test double first on PATH answers
instead), every other vendor's from the listener that reads it.

The inventory is the union of what the registered GPU listeners declare (``Listener.inventory``,
radtrack/vocab/device_inventory.py): smi's GPUs are nvidia-smi's answer here, which also gives
what only NVIDIA has (MIG mode, power limits, clocks); the others' (amdsmi's AMD GPUs) come from
their listeners, found through the entry points, so a new vendor's listener brings its GPUs
and the variable that selects them for a process with it.

Every query returns an empty answer instead of raising when ``nvidia-smi`` is missing or
fails: a host without GPUs is a normal state, not an error.
"""

from __future__ import annotations

import atexit
import re
import subprocess
from dataclasses import dataclass
from functools import cache

from radtrack import device_entries
from radtrack.vocab import schema
from radtrack.vocab.device_inventory import CUDA_VISIBLE, NVIDIA, DeviceInfo

SMI = "nvidia-smi"
#: the listener whose GPUs are nvidia-smi's answer (the registered name)
SMI_LISTENER = "smi"
QUERY_FIELDS = (
    "index", "uuid", "name", "mig.mode.current", "driver_version",
    "power.limit", "power.min_limit", "power.max_limit", "clocks.max.sm",
)
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Gpu:
    """One physical GPU as its vendor numbers it: ``nvidia-smi``'s (PCI bus order) for an
    NVIDIA GPU, with what only NVIDIA has; another vendor's listener's order otherwise."""

    index: int
    uuid: str
    name: str
    mig_mode: str  # "Enabled", "Disabled" or "[N/A]" (GPU without MIG)
    driver: str
    power_limit_w: float | None = None
    power_min_w: float | None = None
    power_max_w: float | None = None
    max_sm_clock_mhz: int | None = None
    vendor: str = NVIDIA
    listener: str = SMI_LISTENER  # the listener that reads it (and declared it)
    visibility: tuple[str, ...] = (CUDA_VISIBLE,)  # DeviceInfo.visibility: the first is set
    memory_mib: float | None = None

    @property
    def mig_enabled(self) -> bool:
        return self.mig_mode.strip().lower() == "enabled"

    @property
    def nvidia(self) -> bool:
        """Whether MPS, MIG, clock locks and power limits (nvidia-smi's) apply to it."""
        return self.vendor == NVIDIA

    @property
    def described(self) -> str:
        """'an AMD Instinct MI300X (read by amdsmi)': what a message says it is."""
        name = self.name or f"{self.vendor} GPU"
        return f"{'an' if name[:1].upper() in 'AEIOU' else 'a'} {name} (read by {self.listener})"

    def info(self) -> DeviceInfo:
        return DeviceInfo(index=self.index, uuid=self.uuid, name=self.name, vendor=self.vendor,
                          listener=self.listener, visibility=self.visibility,
                          memory_mib=self.memory_mib)

    @classmethod
    def of(cls, d: DeviceInfo) -> Gpu:
        """Another vendor's GPU as its listener declared it: none of NVIDIA's settings."""
        return cls(index=d.index, uuid=d.uuid, name=d.name, mig_mode="[N/A]", driver="",
                   vendor=d.vendor, listener=d.listener, visibility=d.visibility,
                   memory_mib=d.memory_mib)


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile offered by ``nvidia-smi mig -lgip``."""

    gpu: int
    name: str  # "1g.10gb", "1g.10gb+me", ... (without the "MIG " prefix)
    id: int
    free: int
    total: int
    memory_gib: float
    sms: int


@dataclass(frozen=True)
class MigDevice:
    """One MIG device line of ``nvidia-smi -L``."""

    gpu: int
    profile: str
    device: int  # the MIG device index within its GPU, not the GPU-instance id
    uuid: str  # "MIG-..."


def run_smi(args: list[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str] | None:
    """Run ``nvidia-smi ARGS``; None when the tool is missing or hangs."""
    try:
        return subprocess.run([SMI, *args], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def parse_inventory(text: str) -> list[Gpu]:
    """Parse ``--query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`` output."""
    gpus = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY_FIELDS) or not cells[0].isdigit():
            continue
        clock = _number(cells[8])
        gpus.append(Gpu(index=int(cells[0]), uuid=cells[1], name=cells[2], mig_mode=cells[3],
                        driver=cells[4], power_limit_w=_number(cells[5]),
                        power_min_w=_number(cells[6]), power_max_w=_number(cells[7]),
                        max_sm_clock_mhz=int(clock) if clock is not None else None))
    return gpus


def _inventory_args() -> list[str]:
    return [f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"]


# a launch's inventory query, started before the launcher's own imports (prefetch_inventory):
# nvidia-smi takes 30-130 ms on an H100 host, which the scripts' start would otherwise wait for
_PREFETCHED: list[subprocess.Popen[str]] = []
_AT_LAUNCH: list[list[Gpu]] = []


def prefetch_inventory() -> None:
    """Start the inventory query in the background now; the next :func:`inventory` call takes
    its answer instead of running nvidia-smi again, and :func:`launch_inventory` keeps it."""
    forget_launch()  # a launch of its own (tests run several in one process)
    try:
        proc = subprocess.Popen([SMI, *_inventory_args()], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    except OSError:  # no nvidia-smi: no GPU, answered at once
        _AT_LAUNCH.append([])
        return
    _PREFETCHED.append(proc)


def _reap() -> None:
    """A prefetched query nothing asked for (a launch refused before its checks): not left
    running or unreaped behind the launcher."""
    for proc in _PREFETCHED:
        proc.kill()
        proc.communicate()
    _PREFETCHED.clear()


atexit.register(_reap)


def forget_launch() -> None:
    """The launch is over: its answer is not the next one's (tests run several in one process)."""
    _reap()
    _AT_LAUNCH.clear()


def _take_prefetched() -> list[Gpu] | None:
    try:
        proc = _PREFETCHED.pop()  # atomic: a second thread finds it taken, not half-taken
    except IndexError:
        return None
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        out = ""
    gpus = parse_inventory(out) if proc.returncode == 0 else []
    _AT_LAUNCH.append(gpus)
    return gpus


def nvidia_inventory() -> list[Gpu]:
    """Every NVIDIA GPU on this host (smi's inventory); [] when nvidia-smi is missing or
    fails. The first call after :func:`prefetch_inventory` returns the prefetched answer;
    every other call asks anew."""
    prefetched = _take_prefetched()
    if prefetched is not None:
        return prefetched
    proc = run_smi(_inventory_args())
    if proc is None or proc.returncode != 0:
        return []
    return parse_inventory(proc.stdout)


def other_vendors() -> list[Gpu]:
    """The GPUs the registered listeners other than smi declare (amdsmi's AMD GPUs, a
    plugin's): each registered listener's ``inventory()``; one that fails to load or to
    answer declares none (the registry warns of the former)."""
    from radtrack.errors import RadtrackError
    from radtrack.listeners import registry
    from radtrack.listeners.base import Listener
    from radtrack.vocab import declared

    out: list[Gpu] = []
    # smi is not even loaded (its GPUs are nvidia-smi's, above): the others cost the launch
    # 40-50 ms of CPU where its Listeners did not load them already (the 2-core VM, loaded)
    for name in sorted(n for n in declared.registered() if n != SMI_LISTENER):
        try:
            cls = registry.get(name)
        except RadtrackError:  # failed to load: the registry warned of it
            continue
        if not issubclass(cls, Listener):
            continue  # a command wrapper (nsys, ncu): no GPU of its own
        try:  # the base's answer is []: a listener that reads no GPU declares none
            out += [Gpu.of(d) for d in cls.inventory()]
        except Exception:  # noqa: BLE001, S112 - a plugin's broken inventory is no GPU, not no launch
            continue
    return out


def inventory() -> list[Gpu]:
    """Every GPU on this host: NVIDIA's (nvidia-smi's, first), then every other listener's."""
    return nvidia_inventory() + other_vendors()


def launch_inventory() -> list[Gpu]:
    """The GPUs as this launch found them (the prefetched answer, waited for if nobody took it
    yet), else :func:`inventory` now: for the runs' host tags, without a second query."""
    prefetched = _take_prefetched()
    if prefetched is not None:
        return prefetched + other_vendors()
    return _AT_LAUNCH[0] + other_vendors() if _AT_LAUNCH else inventory()


# "|   0  MIG 1g.10gb         19     7/7        9.75       No     16     1     0   |"
_LGIP_RE = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)"
    r"\s+(?P<mem>[\d.]+)\s+\S+\s+(?P<sms>\d+)")


def parse_mig_profiles(text: str) -> dict[int, dict[str, MigProfile]]:
    """Parse ``nvidia-smi mig -lgip``: GPU index -> profile name (lower case) -> profile."""
    out: dict[int, dict[str, MigProfile]] = {}
    for line in text.splitlines():
        m = _LGIP_RE.match(line.strip())
        if not m:
            continue
        p = MigProfile(gpu=int(m["gpu"]), name=m["name"].lower(), id=int(m["id"]),
                       free=int(m["free"]), total=int(m["total"]), memory_gib=float(m["mem"]),
                       sms=int(m["sms"]))
        out.setdefault(p.gpu, {})[p.name] = p
    return out


def mig_profiles(index: int) -> dict[str, MigProfile]:
    """GPU-instance profiles GPU ``index`` offers; {} when it offers none (no MIG support)."""
    proc = run_smi(["mig", "-lgip", "-i", str(index)])
    if proc is None or proc.returncode != 0:
        return {}
    return parse_mig_profiles(proc.stdout).get(index, {})


_L_GPU_RE = re.compile(r"^GPU\s+(\d+):\s.*\(UUID:\s*(GPU-[^)\s]+)\)")
_L_MIG_RE = re.compile(r"^MIG\s+(\S+)\s+Device\s+(\d+):\s*\(UUID:\s*(MIG-[^)\s]+)\)")


def parse_mig_devices(text: str) -> list[MigDevice]:
    """MIG devices listed by ``nvidia-smi -L`` (indented under the GPU they belong to)."""
    out: list[MigDevice] = []
    gpu: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if m := _L_GPU_RE.match(stripped):
            gpu = int(m[1])
        elif (m := _L_MIG_RE.match(stripped)) and gpu is not None:
            out.append(MigDevice(gpu=gpu, profile=m[1].lower(), device=int(m[2]), uuid=m[3]))
    return out


def mig_devices() -> list[MigDevice]:
    """Every MIG device on this host now; [] when there are none or nvidia-smi fails."""
    proc = run_smi(["-L"])
    if proc is None or proc.returncode != 0:
        return []
    return parse_mig_devices(proc.stdout)


_CUDA_RE = re.compile(r"CUDA Version\s*:\s*([\d.]+)")


def parse_cuda_version(text: str) -> str | None:
    """The CUDA version from the ``nvidia-smi`` banner or ``nvidia-smi -q``."""
    m = _CUDA_RE.search(text)
    return m[1] if m else None


@cache
def host_tags() -> dict[str, str]:
    """``radtrack.gpu.*`` run tags describing this host's GPUs; {} without a GPU."""
    gpus = launch_inventory()
    if not gpus:
        return {}
    tags = {
        schema.GPU_NAMES: ",".join(g.name for g in gpus),
        schema.GPU_UUIDS: ",".join(g.uuid for g in gpus),
    }
    if gpus[0].driver:  # nvidia-smi's; another vendor's listener declares none
        tags[schema.GPU_DRIVER] = gpus[0].driver
    banner = run_smi([])
    cuda = parse_cuda_version(banner.stdout) if banner and banner.returncode == 0 else None
    if cuda:
        tags[schema.GPU_CUDA] = cuda
    return tags


def resolve_index(device: str, gpus: list[Gpu]) -> int | None:
    """The nvidia-smi index of a sheet device ("0" or "GPU-<uuid>"); None when not on this host."""
    found = resolve(device, gpus)
    return found[0].index if found else None


def resolve(device: str, gpus: list[Gpu]) -> list[Gpu]:
    """The GPUs a sheet device ("0" or "GPU-<uuid>") names, NVIDIA's first: one, or none when
    not on this host, or one of each vendor for an index on a host with two vendors' GPUs
    (each numbers its own from 0; the sheet checks refuse that)."""
    out = []
    for g in gpus:
        if device_entries.matching(device, [(g.index, g.uuid)]):
            out.append(g)
    return out
