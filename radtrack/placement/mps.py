"""MPS placement: one private MPS control daemon per device set, rows run as its clients."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from radtrack import gpus as gpus_mod
from radtrack.errors import PlacementError
from radtrack.placement.base import Log, Part, check, run
from radtrack.placement.plain import DEVICE_ORDER
from radtrack.spec import RunSpec

CONTROL = "nvidia-cuda-mps-control"
READY_TIMEOUT_S = 10.0
# quit waits for the MPS server to drain its clients' contexts: allow it more time
QUIT_TIMEOUT_S = 30.0
# A Unix socket path holds at most 107 bytes; the daemon's socket is <pipe dir>/control.
MAX_PIPE_DIR = 90


@dataclass
class Daemon:
    devices: tuple[str, ...]  # as written in the sheet
    visible: str  # CUDA_VISIBLE_DEVICES for daemon and clients
    clients_see_visible: bool
    pipe_dir: Path
    log_dir: Path
    pipe_is_temp: bool
    started: bool = False
    pid: int | None = None  # the real control daemon's process, once found

    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.visible, **DEVICE_ORDER,
                "CUDA_MPS_PIPE_DIRECTORY": str(self.pipe_dir),
                "CUDA_MPS_LOG_DIRECTORY": str(self.log_dir)}

    @property
    def label(self) -> str:
        return "+".join(self.devices)


class MpsDaemons(Part):
    def __init__(self, specs: list[RunSpec], run_dir: Path, log: Log, host: list[gpus_mod.Gpu]):
        self.log = log
        self.daemons: dict[tuple[str, ...], Daemon] = {}
        self.rows = [s for s in specs if s.collocation_kind == "mps"]
        for s in self.rows:
            key = tuple(sorted(s.devices))
            if key in self.daemons:
                continue
            base = Path(run_dir) / "mps" / f"gpu{'+'.join(key)}"
            pipe, temp = base / "pipe", False
            if len(str(pipe)) > MAX_PIPE_DIR:
                digest = hashlib.sha1(str(pipe).encode()).hexdigest()[:12]
                pipe, temp = Path(tempfile.gettempdir()) / f"radtrack-mps-{digest}", True
            # NVIDIA recommends UUIDs: with indices the server renumbers the devices, and a
            # client keeping the daemon's "1" would ask for a device that no longer exists.
            uuids = [next((g.uuid for g in host if g.index == i), None)
                     for i in (gpus_mod.resolve_index(d, host) for d in key)]
            if all(uuids):
                visible, clients = ",".join(u for u in uuids if u), True
            else:
                visible, clients = ",".join(key), False
            self.daemons[key] = Daemon(key, visible, clients, pipe, base / "log", temp)

    def _daemon(self, spec: RunSpec) -> Daemon:
        return self.daemons[tuple(sorted(spec.devices))]

    def describe(self) -> list[str]:
        steps = []
        for d in self.daemons.values():
            letters = ", ".join(s.letter for s in self.rows if self._daemon(s) is d)
            note = " (short folder: the socket path under the run folder is too long)" \
                if d.pipe_is_temp else ""
            steps.append(f"start MPS control daemon for GPU {d.label} (rows {letters}): "
                         f"CUDA_VISIBLE_DEVICES={d.visible} CUDA_MPS_PIPE_DIRECTORY={d.pipe_dir}"
                         f"{note} CUDA_MPS_LOG_DIRECTORY={d.log_dir} {CONTROL} -d")
            steps.append(f"after the workload: quit it (echo quit | {CONTROL}, same environment)")
        return steps

    def setup(self) -> None:
        for d in self.daemons.values():
            d.pipe_dir.mkdir(parents=True, exist_ok=True)
            d.log_dir.mkdir(parents=True, exist_ok=True)
            if (d.pipe_dir / "control").exists():
                raise PlacementError(f"an MPS control daemon already listens in {d.pipe_dir}; "
                                     f"quit it with: echo quit | CUDA_MPS_PIPE_DIRECTORY="
                                     f"{d.pipe_dir} {CONTROL}")
            proc = run([CONTROL, "-d"], env={**os.environ, **d.env()})
            check(proc, f"starting the MPS control daemon for GPU {d.label}")
            d.started = True  # from here on teardown sends quit, even if it never got ready
            self.log(f"MPS control daemon started for GPU {d.label} (pipes in {d.pipe_dir})")
            if not _wait(lambda d=d: (d.pipe_dir / "control").exists(), READY_TIMEOUT_S):
                raise PlacementError(f"the MPS control daemon for GPU {d.label} did not open "
                                     f"{d.pipe_dir / 'control'} within {READY_TIMEOUT_S:g} s; "
                                     f"see {d.log_dir / 'control.log'}")
            d.pid = _daemon_pid(d.pipe_dir)

    def teardown(self) -> list[str]:
        problems = []
        for d in reversed(list(self.daemons.values())):
            if not d.started:
                continue
            manual = f"echo quit | CUDA_MPS_PIPE_DIRECTORY={d.pipe_dir} {CONTROL}"
            try:
                proc = run([CONTROL], env={**os.environ, **d.env()}, stdin="quit\n")
                check(proc, f"quitting the MPS control daemon for GPU {d.label}")
            except PlacementError as exc:
                problems.append(f"{exc}; quit it by hand: {manual}")
                continue
            if not _wait(lambda d=d: _gone(d), QUIT_TIMEOUT_S):
                problems.append(f"the MPS control daemon for GPU {d.label} still listens in "
                                f"{d.pipe_dir} after quit; quit it by hand: {manual}")
                continue
            d.started = False
            self.log(f"MPS control daemon for GPU {d.label} quit")
            if d.pipe_is_temp:
                shutil.rmtree(d.pipe_dir, ignore_errors=True)
        return problems

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        if spec.collocation_kind != "mps":
            return {}
        env = self._daemon(spec).env()
        if not self._daemon(spec).clients_see_visible:
            del env["CUDA_VISIBLE_DEVICES"]
        if spec.mps_percentage is not None:
            env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(spec.mps_percentage)
        return env

    def artifacts(self) -> list[Path]:
        return [p for d in self.daemons.values() for p in sorted(d.log_dir.glob("*.log"))]


def _daemon_pid(pipe_dir: Path) -> int | None:
    """The control daemon serving ``pipe_dir``: the process named nvidia-cuda-mps-control
    whose environment names that pipe directory (None when there is no such process, as
    with the test doubles, which keep their state in files)."""
    import psutil

    for p in psutil.process_iter(["name"]):
        try:
            if p.info["name"] == CONTROL and p.environ().get("CUDA_MPS_PIPE_DIRECTORY") == str(pipe_dir):
                return p.pid
        except psutil.Error:
            continue
    return None


def _gone(d: Daemon) -> bool:
    # A real daemon leaves its control FIFO behind when it quits: watch the process.
    if d.pid is not None:
        import psutil

        try:
            return psutil.Process(d.pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    return not (d.pipe_dir / "control").exists()


def _wait(ready: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if ready():  # type: ignore[operator]
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
