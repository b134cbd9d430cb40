"""NVML doubles for whole radtrack runs: every Python process started with this module's
``sitecustomize`` on PYTHONPATH (the launcher, its listeners, the scripts) answers NVML
from a scenario file named by ``RADTRACK_FAKE_NVML``.

A scenario (JSON) lists GPUs:
``{"gpus": [{"uuid": ..., "watts": 400, "mps_server_sm": null,
             "procs": [{"match": "--tag a", "sm": 75, "mem_mib": 1000}, ...]}]}``.
The energy counter advances at ``watts`` in real time, so a run's counter energy is
``watts x its duration``. A process whose command line contains ``match`` is on that GPU
with ``mem_mib`` of memory and ``sm`` % SM utilisation in every per-process sample (with
``"after_s": s``, only once it has run s seconds: a script reaching for the GPU late). With
``mps_server_sm`` set, the matched processes are MPS clients: listed with their memory,
never sampled; the samples carry that figure for an MPS server process instead, as the
H100 and H200 drivers do (580.159.04: the server's pid alone, 76 % and 100 %).
Optional per GPU: ``"power_ring": true`` offers the driver's power sample buffer, one
sample every 20 ms of wall clock at ``watts``, 119 deep as on the H100 (``"ring_depth"``);
``"util_gpu": pct`` is the GPU utilisation NVML reports (0 by default; 25 stands for a load
busy a quarter of the time, 100 for a steady one); ``"gpm_fails_after": n`` makes every process's GPM read after its n-th fail with an
NVML error that is not "not supported" (a broken reading, not an absent one).
Optional at the top level: ``"listener_init_delay_s": s`` makes ``nvmlInit`` take that long
in listener processes (``python -m radtrack.listeners``): a slow driver start;
``"init_log": path`` appends, for every ``nvmlInit`` outside a listener process, one JSON
line: the process's pid, argv, the time and how many of its children run a tracked script then;
``"call_log": path`` appends, when a process that called NVML exits, one JSON line: its pid,
argv and NVML calls per function, in all (``calls``) and per GPU UUID (``by_gpu``: the calls
whose first argument is that GPU), which tests and benchmarks/listener_cpu.py read the paces
from. Optional per GPU: ``"energy_field": true`` answers field 83
(NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION) with the energy counter; ``"fields": {id: value}``
answers more field ids (the H100's PCIe byte counters 197/198, ECC counts 3/4); ``"name"``
the model nvmlDeviceGetName gives (default the H100's).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_doubles import H100_NAME, MIB, FakeGpu, FakeNvml  # noqa: E402

MPS_SERVER_PID = 4_000_000  # above any real pid_max; NVML names it


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


class _Patch:
    """The one monkeypatch method FakeNvml uses, for a process with no pytest."""

    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


class ScenarioNvml(FakeNvml):
    def __init__(self, scenario: dict[str, Any]):
        self.t0 = time.time()
        self.init_delay_s = float(scenario.get("listener_init_delay_s", 0.0))
        self.init_log = scenario.get("init_log")
        self.spec = {}
        gpus = []
        for g in scenario["gpus"]:
            gpu = FakeGpu(uuid=g["uuid"], name=str(g.get("name", H100_NAME)), power_mw=int(g["watts"] * 1000),
                          fields={186: int(g["watts"] * 1000), 185: int(g["watts"] * 1000), 82: 39,
                                  **{int(k): v for k, v in g.get("fields", {}).items()}},
                          util=(int(g.get("util_gpu", 0)), 0),
                          energy_field=bool(g.get("energy_field", False)))
            self.spec[id(gpu)] = g
            gpus.append(gpu)
        super().__init__(_Patch(), gpus)  # type: ignore[arg-type]
        if scenario.get("call_log"):
            atexit.register(self._log_calls, scenario["call_log"])

    def _log_calls(self, path: str) -> None:
        calls = self.counts()
        if not calls:
            return
        by_gpu = {g.uuid: c for g in self.gpus if (c := self.counts(g))}
        with open(path, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "argv": sys.argv, "calls": calls,
                                "by_gpu": by_gpu}) + "\n")

    def _energy(self, handle: FakeGpu) -> float:
        return 1_000_000 + self.spec[id(handle)]["watts"] * 1000 * (time.time() - self.t0)

    def _matched(self, handle: FakeGpu) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for proc in psutil.process_iter(["pid", "cmdline", "create_time"]):
            line = " ".join(proc.info["cmdline"] or [])
            if "radtrack.script.bootstrap" not in line:
                continue
            age = time.time() - (proc.info["create_time"] or 0.0)
            for p in self.spec[id(handle)]["procs"]:
                if p["match"] in line and age >= p.get("after_s", 0.0) and (
                        p.get("any_gpu") or self._sees(proc, handle)):
                    out.append((proc.info["pid"], p))
        return out

    def _sees(self, proc: psutil.Process, handle: FakeGpu) -> bool:
        """Whether a process can hold a context on ``handle``, as CUDA allows: a
        CUDA_VISIBLE_DEVICES of GPU indices or GPU UUIDs that leaves this physical GPU out
        hides it (MIG instances and an unset variable: seen). ``"any_gpu": true`` in a proc
        spec overrides it (a process that reaches a GPU some other way)."""
        try:
            cvd = proc.environ().get("CUDA_VISIBLE_DEVICES")
        except psutil.Error:
            return True
        if cvd is None or handle not in self.gpus:
            return True
        entries = [e.strip() for e in cvd.split(",") if e.strip()]
        if all(e.isdigit() for e in entries):
            return str(self.gpus.index(handle)) in entries
        if all(e.startswith("GPU-") for e in entries):
            return any(handle.uuid.startswith(e) for e in entries)
        return True

    def nvmlInit(self) -> None:
        listener = "listeners" in Path(sys.argv[0] if sys.argv else "").parts
        if self.init_delay_s and listener:
            time.sleep(self.init_delay_s)
        if self.init_log and not listener:
            scripts = [c for c in psutil.Process().children()
                       if "radtrack.script.bootstrap" in " ".join(_cmdline(c))]
            with open(self.init_log, "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "argv": sys.argv, "t": time.time(),
                                    "script_children": len(scripts)}) + "\n")

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        handle.procs = [(pid, int(p["mem_mib"] * MIB)) for pid, p in self._matched(handle)]
        if self.spec[id(handle)].get("mps_server_sm") is not None:
            handle.procs.append((MPS_SERVER_PID, 66 * MIB))
        return super().nvmlDeviceGetComputeRunningProcesses(handle)

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle: FakeGpu) -> list[Any]:
        mps = self.spec[id(handle)].get("mps_server_sm") is not None
        handle.mps_procs = [(pid, int(p["mem_mib"] * MIB)) for pid, p in self._matched(handle)] if mps else []
        return super().nvmlDeviceGetMPSComputeRunningProcesses(handle)

    def nvmlDeviceGetSamples(self, device: FakeGpu, sampling_type: int, timeStamp: int) -> Any:
        g = self.spec.get(id(device), {})
        if g.get("power_ring"):
            step, depth = 20_000, g.get("ring_depth", device.ring_depth)
            newest = int(time.time() * 1e6) // step * step
            device.power_ring = [(t, int(g["watts"] * 1000))
                                 for t in range(newest - (depth - 1) * step, newest + 1, step)]
        return super().nvmlDeviceGetSamples(device, sampling_type, timeStamp)

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:
        self.gpm_reads = getattr(self, "gpm_reads", 0) + 1
        limit = min((g["gpm_fails_after"] for g in self.spec.values() if "gpm_fails_after" in g),
                    default=None)
        if limit is not None and self.gpm_reads > limit:
            import pynvml

            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)
        return super().nvmlGpmMetricsGet(metricsGet)

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        return "nvidia-cuda-mps-server" if pid == MPS_SERVER_PID else "python3"

    def nvmlDeviceGetProcessUtilization(self, handle: FakeGpu, timeStamp: int) -> list[Any]:
        now = int(time.time() * 1e6)
        server = self.spec[id(handle)].get("mps_server_sm")
        if server is not None:
            handle.putil = [(MPS_SERVER_PID, now, int(server), 5)] if self._matched(handle) else []
        else:
            handle.putil = [(pid, now, int(p["sm"]), 5) for pid, p in self._matched(handle)]
        return super().nvmlDeviceGetProcessUtilization(handle, timeStamp)


def install(path: str) -> None:
    ScenarioNvml(json.loads(Path(path).read_text()))


def write(path: Path, gpus: list[dict[str, Any]], **extra: Any) -> dict[str, str]:
    """Write a scenario (``extra``: its top-level options); returns the environment that
    makes child processes use it."""
    path.write_text(json.dumps({"gpus": gpus, **extra}))
    site = str(Path(__file__).resolve().parent / "nvml_site")
    return {"RADTRACK_FAKE_NVML": str(path),
            "PYTHONPATH": os.pathsep.join([site, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
