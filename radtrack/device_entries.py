"""How a run names its GPUs: the one set of selection rules every GPU inventory resolves with.

A device entry is an index (``0``), a GPU UUID or a unique prefix of one (``GPU-558ac94e``),
a MIG UUID (``MIG-<uuid>``) or the legacy MIG form ``MIG-GPU-<uuid>/<gi>/<ci>``. The sheet's
Devices cell joins entries with ``+`` (``0+1``); CUDA_VISIBLE_DEVICES joins them with ``,``.
The two inventories that resolve entries to GPUs, ``radtrack.gpus`` (nvidia-smi text, for the
launcher's checks) and ``radtrack.listeners.devices`` (NVML handles, in listener processes),
both parse and match through here. Standard library only: listener processes import it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

# re.ASCII: \d would otherwise match any Unicode digit ('²', '٣').
INDEX_RE = re.compile(r"^\d+$", re.ASCII)
SHEET_UUID_RE = re.compile(r"^GPU-[0-9a-f]{4,}[0-9a-f-]*$", re.IGNORECASE)
LEGACY_MIG_RE = re.compile(r"^MIG-(GPU-[0-9a-fA-F-]+)/(\d+)/(\d+)$")


def parse_devices(text: str) -> list[str]:
    """A Devices cell: '0', '1+2', 'GPU-<uuid>' -> list of entries; ValueError when malformed."""
    if not text or text == "-":
        return []
    tokens = [t.strip() for t in text.split("+")]
    out = []
    for t in tokens:
        if INDEX_RE.match(t):
            out.append(str(int(t)))
        elif SHEET_UUID_RE.match(t):
            out.append(t)
        elif t.upper().startswith("MIG-"):
            raise ValueError(f"{t!r} is a MIG device; give its GPU and a MIG profile in "
                             "Collocation instead (radtrack creates the instance)")
        else:
            raise ValueError(f"{t!r} is not a GPU index (0, 1+2) or a GPU UUID (GPU-...)")
    if len(set(out)) != len(out):
        raise ValueError(f"{text!r} names a device twice")
    return out


def is_cuda_entry(entry: str) -> bool:
    """Whether CUDA takes ``entry`` as a device (an index, ``GPU-...`` or ``MIG-...``)."""
    return entry.isdigit() or entry.startswith(("GPU-", "MIG-"))


def parse_cuda_visible(raw: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES as CUDA reads it: entries up to the first invalid one."""
    out: list[str] = []
    for part in raw.split(","):
        part = part.strip()
        if not is_cuda_entry(part):
            break  # CUDA itself ignores everything from the first invalid entry on
        out.append(part)
    return out


def visible_entries(devices: Sequence[str], environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The run's device entries: ``devices`` if given, else CUDA_VISIBLE_DEVICES of
    ``environ`` (this process's by default); None means every GPU (the variable is unset)."""
    if devices:
        return [d.strip() for d in devices if d.strip()]
    env = os.environ if environ is None else environ
    raw = env.get("CUDA_VISIBLE_DEVICES")
    return None if raw is None else parse_cuda_visible(raw)


# A row placed on GPUs that another variable than CUDA_VISIBLE_DEVICES selects (an AMD GPU's
# ROCR_VISIBLE_DEVICES, radtrack/placement/plain.py) also gets its Devices entries here: the
# row's listeners are told their GPUs from it (placed_entries), whatever the vendor.
PLACED_ENV = "RADTRACK_DEVICES"


def placed_entries(env: Mapping[str, str]) -> list[str]:
    """A row's device entries for its listeners: :data:`PLACED_ENV` where the placement set
    it, else CUDA_VISIBLE_DEVICES (NVIDIA GPUs, MIG and MPS rows, a row's own Env); [] = all."""
    raw = env.get(PLACED_ENV) or env.get("CUDA_VISIBLE_DEVICES", "")
    return [d.strip() for d in raw.split(",") if d.strip()]


def uuid_matches(uuid: str, entry: str) -> bool:
    """Whether ``entry`` names the GPU with ``uuid``: CUDA accepts a unique prefix, so we do."""
    return uuid.lower().startswith(entry.lower())


def matching(entry: str, gpus: Sequence[tuple[int, str]]) -> list[int]:
    """The indices of the ``(index, uuid)`` GPUs that ``entry`` (an index or a GPU UUID or
    prefix) names, in the order given; the caller decides what none or several means."""
    if entry.isdigit():
        return [i for i, _ in gpus if i == int(entry)]
    return [i for i, uuid in gpus if uuid_matches(uuid, entry)]


# The launcher tells each row's listeners which of the row's device entries another row of
# the same workload may use too (comma-separated, as in the row's CUDA_VISIBLE_DEVICES;
# "*": all of them; "": none). smi reads the per-process SM shares that co-location
# accounting splits a GPU's energy by only where they can matter (radtrack/listeners/smi_reads.py).
SHARED_GPUS_ENV = "RADTRACK_SHARED_GPUS"
ALL_SHARED = "*"


def shared_hint(value: str | None) -> set[str] | None:
    """``SHARED_GPUS_ENV`` as the listener reads it: the shared entries, None for "every one
    may be shared" (``*``, or unset: a listener started without the launcher's word reads
    the shares everywhere, as it always did)."""
    if value is None or value.strip() == ALL_SHARED:
        return None
    return {e.strip() for e in value.split(",") if e.strip()}


def shared_entries(rows: Sequence[Sequence[str] | None]) -> list[str]:
    """``SHARED_GPUS_ENV`` for each of a workload's rows, given each row's device entries
    (None: the row sees every GPU): the entries of the row that another row may use too.
    Where that cannot be told from the entries alone (an index against a UUID, MIG
    instances, a row seeing every GPU) the entry counts as shared."""
    out = []
    for i, mine in enumerate(rows):
        others = [r for j, r in enumerate(rows) if j != i]
        if mine is None:
            out.append(ALL_SHARED if any(o is None or o for o in others) else "")
            continue
        out.append(",".join(e for e in mine if any(_may_share(e, o) for o in others)))
    return out


def _may_share(entry: str, other: Sequence[str] | None) -> bool:
    if other is None:  # that row sees every GPU
        return True
    for o in other:
        if entry.upper().startswith("MIG-") or o.upper().startswith("MIG-"):
            return True  # instances of one GPU share its power and energy
        if entry.isdigit() != o.isdigit():
            return True  # an index against a UUID: not told apart without the inventory
        if entry.isdigit():
            if int(entry) == int(o):
                return True
        elif uuid_matches(entry, o) or uuid_matches(o, entry):
            return True
    return False
