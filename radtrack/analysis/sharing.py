"""What a run shared, in words: ``solo``, ``GPU time-slicing with N`` (plain co-location on a
GPU the run's processes used: N other runs beside it), ``own GPU, host shared with N``
(co-located, each row on GPUs of its own: tag ``radtrack.shared_gpus`` empty), ``CPU only, shared with N``
(co-located, but its processes never used a GPU: they shared the host's CPUs), ``MPS 50 %
with N`` (``MPS`` without a limit), ``MIG slice 3g.40gb``, in the words of radtrack/spec.py
``sharing_text``; one owner for the report's ``sharing`` column and the page's labels
(radtrack/frontend/colocation.py). Read from a run's record (a row of analysis/data.py's runs frame:
``tag.*`` and ``metric.*`` columns): its ``radtrack.collocation`` and
``radtrack.colocated_with`` tags (docs/architecture.md), its per-process GPU summaries
(``summary/smi/gpu<i>/proc_mem_used_mib/max``) and the GPUs it saw.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from radtrack.compute.attribution import HOST_METHOD
from radtrack.spec import sharing_text
from radtrack.vocab import schema
from radtrack.vocab.device_identity import device_facts, reads_gpus


def text_of(value: object) -> str:
    """A record's cell as stripped text; '' for None or NaN."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


_MPS = re.compile(r"^mps(?::(\d+(?:\.\d+)?))?$", re.IGNORECASE)
_ABSENT = ("", "-", "none", "nan")


def colocated_count(row: Mapping[str, object]) -> int:
    """How many other runs shared the run's GPUs (its ``radtrack.colocated_with`` names)."""
    others = text_of(row.get(f"tag.{schema.COLOCATED_WITH}"))
    return len([n for n in others.split(",") if n.strip()])


_PROCESS_GPU = re.compile(r"^metric\.summary/[^/]+/gpu\d+/(proc_mem_used_mib|proc_sm_util_pct)/(max|mean)$")


def uses_gpu(row: Mapping[str, object]) -> bool | None:
    """Whether the run's processes used a GPU: its per-process GPU readings (memory, SM
    share) where it has them (True where any is above 0); else True for a row placed on a
    GPU the host has (its Devices cell set, a GPU listener ran), False for a run that saw no
    GPU (none on the host: no GPU listener ran), None where it saw GPUs it was not placed on."""
    readings = [v for k, v in row.items() if isinstance(k, str) and _number(v) and (
        _PROCESS_GPU.match(k) or (k.startswith(f"metric.{schema.SUMMARY_ATTRIBUTION_PREFIX}")
                                  and k.endswith("/sm_share_pct")))]
    if readings:
        return any(float(v) > 0 for v in readings)
    # a GPU listener (any vendor's) ran, or described a GPU, or the host listed its GPUs
    prefix = f"tag.{schema.LISTENER_TAG_PREFIX}"
    ran = [k[len(prefix):] for k, v in row.items() if isinstance(k, str) and k.startswith(prefix)
           and "." not in k[len(prefix):] and text_of(v) == "ok"]
    seen = (any(reads_gpus(name) for name in ran) or text_of(row.get(f"tag.{schema.GPU_UUIDS}"))
            or any(f.get("uuid") for f in device_facts(row).values()))
    if not seen:
        return False
    devices = text_of(row.get(f"tag.{schema.DEVICES}") or row.get("devices"))
    return True if devices.strip("-") else None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def colocation_text(row: Mapping[str, object]) -> str:
    """``solo``, ``GPU time-slicing with 2``, ``CPU only, shared with 1``, ``MPS 50 % with 1``,
    ``MIG slice 3g.40gb``; '' for a run radtrack did not launch (no co-location recorded)."""
    mode = text_of(row.get("collocation") or row.get(f"tag.{schema.COLLOCATION}"))
    others = colocated_count(row)
    mig = text_of(row.get(f"tag.{schema.MIG_PROFILE}"))
    if _MPS.match(mode) or mode.lower() not in _ABSENT:
        return sharing_text(mode, others, None)
    if mig:
        return sharing_text(mig, others, None)
    if others:
        shared = row.get(f"tag.{schema.SHARED_GPUS}")
        # a GPU followed outside the row's Devices may be another row's (radtrack/listeners/gpu_follow.py)
        followed = any(isinstance(k, str) and k.startswith("tag.radtrack.listener.") and k.endswith(".followed")
                       and text_of(v) for k, v in row.items())
        # co-location accounting split one of its devices (not the host's CPU side, which
        # co-located rows always share) with someone: it was not its own
        prefix = f"tag.{schema.ATTRIBUTION_TAG_PREFIX}"
        split = any(isinstance(k, str) and k.startswith(prefix) and "." not in k[len(prefix):]
                    and text_of(v) not in ("", "solo", HOST_METHOD) for k, v in row.items())
        gpu_shared = None if not isinstance(shared, str) or followed else bool(shared.strip()) or split
        return sharing_text("-", others, uses_gpu(row), gpu_shared)
    if mode == "-" or row.get(f"tag.{schema.ROLE}") == schema.ROLE_ROW:
        return "solo"
    return ""
