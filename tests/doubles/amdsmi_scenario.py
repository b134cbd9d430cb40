"""Doubles of AMD's amdsmi library for whole radtrack runs (tests/doubles/amdsmi_site/amdsmi):
every Python process started with :func:`write`'s environment (the launcher, its listeners,
the scripts) imports the double instead of ROCm's library.

A scenario (JSON) lists GPUs, each
``{"uuid": ..., "name": "AMD Instinct MI300X", "serial": "0x...", "watts": 400,
"gfx_pct": 60, "umc_pct": 20, "mem_used_mib": 300, "temps": {"edge": 40, "hotspot": 55,
"vram": 50}, "clocks": {"gfx": 2100, "mem": 1300}, "procs": [{"match": "--tag a",
"gfx_pct": 75, "mem_mib": 1200}], "unsupported": ["edge_temp", ...]}``. The energy counter
advances at ``watts`` in real time (a run's counter energy is ``watts`` x its duration); a
tracked script whose command line holds ``match`` is listed on that GPU with ``mem_mib`` of
memory and GFX engine time at ``gfx_pct`` % since it started. ``unsupported`` names
readings the GPU answers AMDSMI_STATUS_NOT_SUPPORTED to (``current_socket_power``,
``energy_count``, ``activity``, ``memory_usage``, ``edge_temp``, ``hotspot_temp``,
``vram_temp``, ``gfx_clock``, ``mem_clock``, ``process_list``, ``uuid``). At the top level,
``"init_fails": "why"`` makes amdsmi_init fail (no amdgpu driver).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SITE = Path(__file__).resolve().parent / "amdsmi_site"


def write(path: Path, gpus: list[dict[str, Any]], **extra: Any) -> dict[str, str]:
    """Write a scenario (``extra``: its top-level options); returns the environment that
    makes child processes use it."""
    path.write_text(json.dumps({"gpus": gpus, **extra}))
    return {"RADTRACK_FAKE_AMDSMI": str(path),
            "PYTHONPATH": os.pathsep.join([str(SITE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
