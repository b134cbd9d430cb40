"""Checks of a sheet's rows against this host: a GPU at all for rows that ask for one,
devices present, MIG profiles offered and free, MIG mode, power and clock ranges, the MPS
control tool."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping

from radtrack import gpus as gpus_mod
from radtrack.placement.clocks import clock_range
from radtrack.sheet.records import Problems
from radtrack.spec import RunSpec
from radtrack.vocab.device_inventory import CUDA_VISIBLE

MPS_CONTROL = "nvidia-cuda-mps-control"
#: nvidia-smi for NVIDIA GPUs, each other vendor's listener for its own (gpus.inventory)
NO_GPU = "no GPU listener reports a GPU on this host"
CPU_FALLBACK_FLAG = "--allow-cpu-fallback"
# CUDA_VISIBLE_DEVICES values that ask for no GPU (SLURM writes NoDevFiles)
_NO_DEVICE_VALUES = ("", "-1", "none", "nodevfiles")


def check_against_host(specs: list[RunSpec], problems: Problems, host: list[gpus_mod.Gpu]) -> None:
    """Checks against this host: devices exist, MIG profiles offered, MIG mode, tools."""
    profiles: dict[int, dict[str, gpus_mod.MigProfile]] = {}
    wanted: dict[tuple[str, int, int, str], list[RunSpec]] = {}
    mps_missing_reported = False
    for s in specs:
        kind = s.collocation_kind
        if kind == "mps" and shutil.which(MPS_CONTROL) is None and not mps_missing_reported:
            problems.add(f"MPS needs {MPS_CONTROL} on PATH (it comes with the NVIDIA driver)",
                         s.row, "Collocation")
            mps_missing_reported = True
        if not host:
            # each GPU feature in its own column; Devices alone: check_gpu_requests
            for what, column, wanted_here in (
                    ("MIG", "Collocation", kind == "mig"), ("MPS", "Collocation", kind == "mps"),
                    ("Clocks", "Clocks", bool(s.clocks)),
                    ("PowerLimit", "PowerLimit", s.power_limit is not None)):
                if wanted_here:
                    problems.add(f"{what} needs an NVIDIA GPU, but {NO_GPU}", s.row, column)
            continue
        placed = _resolve_devices(s, host, problems)
        if _not_nvidia(s, placed, problems):
            continue
        for gpu in placed:
            idx = gpu.index
            if s.power_limit is not None and gpu.power_min_w is not None \
                    and gpu.power_max_w is not None \
                    and not gpu.power_min_w <= s.power_limit <= gpu.power_max_w:
                problems.add(f"{s.power_limit:g} W is outside GPU {idx}'s range "
                             f"{gpu.power_min_w:g}-{gpu.power_max_w:g} W", s.row, "PowerLimit")
            if s.clocks and gpu.max_sm_clock_mhz and clock_range(s.clocks)[1] > gpu.max_sm_clock_mhz:
                problems.add(f"{s.clocks} MHz exceeds GPU {idx}'s maximum SM clock "
                             f"{gpu.max_sm_clock_mhz} MHz", s.row, "Clocks")
        if kind != "mig" or len(placed) != 1:
            continue
        gpu = placed[0]
        idx = gpu.index
        if idx not in profiles:
            profiles[idx] = gpus_mod.mig_profiles(idx)
        offered = profiles[idx]
        if not offered:
            problems.add(f"GPU {idx} ({gpu.name}) offers no MIG profiles (it does not support "
                         "MIG)", s.row, "Collocation")
            continue
        if s.collocation not in offered:
            problems.add(f"GPU {idx} ({gpu.name}) does not offer MIG profile {s.collocation}; "
                         f"it offers {', '.join(offered)}", s.row, "Collocation")
            continue
        if not gpu.mig_enabled:
            problems.add(f"MIG mode is {gpu.mig_mode.lower()} on GPU {idx}; radtrack never "
                         f"changes it: enable it with 'sudo nvidia-smi -i {idx} -mig 1', then "
                         f"reset the GPU ('sudo nvidia-smi -i {idx} -r') or reboot",
                         s.row, "Collocation")
            continue
        wanted.setdefault((s.experiment, s.workload, idx, s.collocation), []).append(s)
    for (experiment, workload, idx, profile), rows in wanted.items():
        free = profiles[idx][profile].free
        if len(rows) > free:
            problems.add(f"workload {experiment}-{workload} needs {len(rows)} instances of "
                         f"{profile} on GPU {idx} but only {free} are free", rows[-1].row,
                         "Collocation")


def _resolve_devices(s: RunSpec, host: list[gpus_mod.Gpu], problems: Problems) -> list[gpus_mod.Gpu]:
    """The GPUs of a row's Devices, each entry on this host and naming one GPU; and no
    variable in its Env that selects GPUs of their vendor too (CUDA_VISIBLE_DEVICES:
    check_row, for every vendor: HIP honours it as well)."""
    placed = []
    for d in s.devices:
        found = gpus_mod.resolve(d, host)
        if not found:
            present = ", ".join(f"{g.index} ({g.uuid})" for g in host)
            problems.add(f"device {d} is not on this host; GPUs here: {present}", s.row, "Devices")
        elif len(found) > 1:
            problems.add(f"device {d} names {' and '.join(g.info().describe for g in found)}: each "
                         "vendor numbers its GPUs from 0, so radtrack cannot tell which; name an "
                         "NVIDIA GPU by its UUID (GPU-...)", s.row, "Devices")
        else:
            placed.append(found[0])
    for gpu in placed:
        for name in gpu.visibility:
            if name in s.env and name != CUDA_VISIBLE:
                problems.add(f"{name}={s.env[name]} conflicts with Devices {'+'.join(s.devices)}, "
                             f"from which radtrack sets {gpu.visibility[0]}; remove it from Env, "
                             "or leave Devices empty to choose the GPUs through Env yourself",
                             s.row, "Env")
                return placed
    return placed


def _not_nvidia(s: RunSpec, placed: list[gpus_mod.Gpu], problems: Problems) -> bool:
    """Refuse NVIDIA's features (MPS, MIG, clock locks, power limits: nvidia-smi's) on another
    vendor's GPU, each in its own column; True when the row asked for one."""
    other = next((g for g in placed if not g.nvidia), None)
    if other is None:
        return False
    asked = False
    for what, column, wanted_here in (
            ("MPS", "Collocation", s.collocation_kind == "mps"),
            ("MIG", "Collocation", s.collocation_kind == "mig"),
            ("Clocks", "Clocks", bool(s.clocks)),
            ("PowerLimit", "PowerLimit", s.power_limit is not None)):
        if wanted_here:
            problems.add(f"{what} is NVIDIA's: GPU {other.index} is {other.described}; run the "
                         f"row on it without {what} (time-sharing: Collocation -), or on an "
                         "NVIDIA GPU", s.row, column)
            asked = True
    return asked


def check_gpu_requests(specs: list[RunSpec], problems: Problems, host: list[gpus_mod.Gpu], *,
                       cpu_fallback: bool = False, warn: Callable[[str], None] | None = None,
                       environ: Mapping[str, str] | None = None) -> None:
    """Rows that ask for a GPU on a host where nvidia-smi sees none: their scripts would run
    on CPU without a word. A Devices cell is refused (with ``cpu_fallback``, the launch's
    ``--allow-cpu-fallback``, a warning instead); a CUDA_VISIBLE_DEVICES naming GPUs, in a
    row's Env or in the launcher's environment, is a warning (radtrack did not pick those
    GPUs). MPS, MIG, Clocks and PowerLimit: check_against_host."""
    environ = os.environ if environ is None else environ
    say = warn or (lambda _message: None)
    if host:
        for item in _inherited_selection(specs, problems, host, environ):
            say(item)
        return
    warnings = Problems(problems.path)
    for s in specs:
        if s.devices:
            if s.collocation_kind in ("mps", "mig") or s.clocks or s.power_limit is not None:
                continue  # refused in its own column (check_against_host): no CPU run of it
            asked = "+".join(s.devices)
            if cpu_fallback:
                warnings.add(f"asks for GPU {asked}, but {NO_GPU}: the script runs on CPU "
                             f"({CPU_FALLBACK_FLAG})", s.row, "Devices")
            else:
                problems.add(f"asks for GPU {asked}, but {NO_GPU} (no GPU driver, or its tool "
                             "or library missing: 'radtrack listeners' says why), so the script "
                             "would run on CPU: remove "
                             f"the devices to run it on CPU, or pass {CPU_FALLBACK_FLAG} to run "
                             "it as it is", s.row, "Devices")
        elif s.env.get("CUDA_VISIBLE_DEVICES", "").strip().lower() not in _NO_DEVICE_VALUES:
            warnings.add(f"CUDA_VISIBLE_DEVICES={s.env['CUDA_VISIBLE_DEVICES']} asks for GPUs, "
                         f"but {NO_GPU}: the script runs on CPU", s.row, "Env")
    inherited = environ.get("CUDA_VISIBLE_DEVICES")
    if inherited is not None and inherited.strip().lower() not in _NO_DEVICE_VALUES \
            and any(not s.devices and "CUDA_VISIBLE_DEVICES" not in s.env for s in specs):
        warnings.items.append(f"the environment's CUDA_VISIBLE_DEVICES={inherited} asks for "
                              f"GPUs, but {NO_GPU}: the script(s) run on CPU")
    for item in warnings.items:
        say(item)


def _inherited_selection(specs: list[RunSpec], problems: Problems, host: list[gpus_mod.Gpu],
                         environ: Mapping[str, str]) -> list[str]:
    """Warnings for a row placed through another variable than CUDA_VISIBLE_DEVICES (an AMD
    GPU's ROCR_VISIBLE_DEVICES) while the launcher's environment sets one that selects among
    those GPUs again (HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES: HIP numbers them within
    ROCR's list), which the row's Env does not override: its script may see another GPU, or
    none. A row on an NVIDIA GPU gets CUDA_VISIBLE_DEVICES itself, over the inherited one."""
    warnings = Problems(problems.path)
    for s in specs:
        for gpu in (g for d in s.devices for g in gpus_mod.resolve(d, host)[:1]):
            if gpu.visibility[:1] == (CUDA_VISIBLE,):
                continue
            for name in gpu.visibility[1:]:
                if name in environ and name not in s.env:
                    warnings.add(f"the environment's {name}={environ[name]} selects among the GPUs "
                                 f"radtrack gives the script in {gpu.visibility[0]} (Devices "
                                 f"{'+'.join(s.devices)}), so it may see another GPU or none: "
                                 "unset it before the launch", s.row, "Devices")
            break
    return warnings.items
