"""Environment capture as run artifacts: packages, conda, nvidia-smi -q, CPU/platform.

Runs in a background thread while the workload runs; a missing tool is skipped quietly.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from pathlib import Path


def _run(argv: list[str], timeout: float = 60) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def packages() -> str:
    """``name==version`` of every distribution of this interpreter (the child's: same one)."""
    from importlib import metadata  # 15 ms: imported here, after the scripts started

    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name and name.lower() not in seen:
            seen[name.lower()] = f"{name}=={dist.version}"
    return "\n".join(sorted(seen.values(), key=str.lower)) + "\n"


def platform_info() -> dict[str, object]:
    import psutil

    info: dict[str, object] = {
        "python": sys.version,
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "hostname": platform.node(),
        "cpu_count_logical": psutil.cpu_count(),
        "cpu_count_physical": psutil.cpu_count(logical=False),
        "memory_total_bytes": psutil.virtual_memory().total,
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    freq = psutil.cpu_freq()
    if freq is not None:
        info["cpu_freq_max_mhz"] = freq.max
    info["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return info


def capture(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pip-freeze.txt").write_text(packages())
    (folder / "platform.json").write_text(json.dumps(platform_info(), indent=1))
    conda = _run(["conda", "list"])
    if conda:
        (folder / "conda-list.txt").write_text(conda)
    smi = _run(["nvidia-smi", "-q"])
    if smi:
        (folder / "nvidia-smi-q.txt").write_text(smi)


def capture_in_background(folder: Path) -> threading.Thread:
    t = threading.Thread(target=capture, args=(folder,), daemon=True, name="envcapture")
    t.start()
    return t
