"""The physical GPU(s) a run used, as a short label for legends and report tables.

Metric keys name a GPU as the run saw it (``smi/gpu0/...``: always gpu0 for a run given
one GPU), so two co-located runs on different GPUs both log ``smi/gpu0``. The mapping to
the physical GPU is in run tags (docs/architecture.md); this module turns them into
``GPU1 5cef8446`` (the host's index and the first 8 hex digits of the UUID), so such runs are
never read as one GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from radtrack.vocab import schema
from radtrack.vocab.device_identity import device_facts

_GPU = re.compile(r"gpu(\d+)")


def short_uuid(uuid: str) -> str:
    """``GPU-5cef8446-c81b-...`` -> ``5cef8446``; ``MIG-1f2e...`` -> ``MIG 1f2e...`` (8 digits);
    a UUID without NVML's kind (amdsmi's ``0cff74a1-0000-...``) -> its first 8 digits."""
    kind, _, rest = uuid.partition("-")
    digits = rest[:8] if rest and kind.upper() in ("GPU", "MIG") else uuid[:8]
    return f"MIG {digits}" if kind.upper() == "MIG" else digits


def physical_gpus(tags: Mapping[str, object]) -> str:
    """``GPU<index> <short uuid>`` per GPU a run used, joined by ', '; '' when unknown.

    From the GPU listener's probe tags (``radtrack.listener.<listener>.gpu<i>.uuid`` and
    ``.index``, smi's ``.nvml_index``: radtrack/vocab/device_identity.py) when present, else
    from the row's ``radtrack.devices`` resolved against the host's ``radtrack.gpu.uuids`` (and ``radtrack.mig_uuid`` for a MIG row).
    Nothing is shown without a UUID: an index alone is what the metric key already says.
    """
    facts = {int(m[1]): f for scope, f in device_facts(tags).items()
             if (m := _GPU.fullmatch(scope)) and f.get("uuid")}
    if facts:
        out = []
        for i in sorted(facts):
            uuid, index = facts[i]["uuid"], facts[i].get("index", "")
            out.append(f"GPU{index} {short_uuid(uuid)}" if index else short_uuid(uuid))
        return ", ".join(out)
    host = [u for u in _text(tags.get(schema.GPU_UUIDS)).split(",") if u]
    devices = [d for d in _text(tags.get(schema.DEVICES)).split("+") if d and d != "-"]
    out = []
    for device in devices:
        if device.isdigit():
            index = int(device)
            uuid = host[index] if index < len(host) else ""
        else:
            index = next((i for i, u in enumerate(host) if u.lower().startswith(device.lower())),
                         -1)
            uuid = host[index] if index >= 0 else device
        if not uuid:
            continue
        label = f"GPU{index} {short_uuid(uuid)}" if index >= 0 else short_uuid(uuid)
        mig = _text(tags.get(schema.MIG_UUID))
        out.append(f"{label} {short_uuid(mig)}" if mig else label)
    return ", ".join(out)


def physical_gpus_of_row(row: Mapping[str, object]) -> str:
    """:func:`physical_gpus` of a ``load_runs`` row (tags as ``tag.<name>`` columns)."""
    return physical_gpus({k[4:]: v for k, v in row.items()
                          if isinstance(k, str) and k.startswith("tag.")})


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()
