"""nsys and ncu: profilers that wrap the workload command instead of sampling
(:class:`radtrack.listeners.wrappers.CommandWrapper`).

``wrap(argv)`` returns the profiler command around the workload; the report lands in
``config.outdir`` (the launcher uploads that folder under ``profiles/``) as
``radtrack.nsys-rep`` / ``radtrack.ncu-rep``. Setting ``nvtx_range`` (default: the
``RADTRACK_PROFILE_NVTX_RANGE`` environment variable) limits profiling to an NVTX range of
that name, e.g. ``profile``, which the script opens around the steps worth profiling.
Extra profiler options come from ``RADTRACK_NSYS_ARGS`` / ``RADTRACK_NCU_ARGS``
(split like a shell would, never run through one).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import ClassVar

from radtrack.errors import RadtrackError
from radtrack.listeners.base import Availability, ListenerConfig
from radtrack.listeners.wrappers import CommandWrapper

REPORT_STEM = "radtrack"


class _Profiler(CommandWrapper):
    tool: ClassVar[str]
    extension: ClassVar[str]
    args_env: ClassVar[str]

    def __init__(self, config: ListenerConfig, nvtx_range: str | None = None):
        super().__init__(config)
        self.nvtx_range = nvtx_range or os.environ.get("RADTRACK_PROFILE_NVTX_RANGE") or None

    @classmethod
    def available(cls) -> Availability:
        if shutil.which(cls.tool) is None:
            return Availability(False, f"no {cls.tool} on PATH (install NVIDIA Nsight)")
        return Availability(True)

    def tags(self) -> dict[str, str]:
        out = {f"radtrack.listener.{self.name}.report": self.outputs()[0].name}
        if self.nvtx_range:
            out[f"radtrack.listener.{self.name}.nvtx_range"] = self.nvtx_range
        return out

    def _outdir(self) -> Path:
        if self.config.outdir is None:
            raise RadtrackError(f"{self.name}: no output folder for the report (ListenerConfig.outdir)")
        return Path(self.config.outdir)

    def outputs(self) -> list[Path]:
        """Where the report will be once the wrapped command has finished."""
        base = self.config.outdir if self.config.outdir is not None else Path(".")
        return [Path(base) / f"{REPORT_STEM}.{self.extension}"]

    def _extra(self) -> list[str]:
        raw = os.environ.get(self.args_env, "")
        try:
            return shlex.split(raw)
        except ValueError as exc:
            raise RadtrackError(f"{self.args_env}={raw!r} cannot be split into arguments: {exc}") from exc

    def _exe(self) -> str:
        return shutil.which(self.tool) or self.tool


class NsysListener(_Profiler):
    """Nsight Systems timeline of the whole run (CUDA, NVTX, OS runtime)."""

    name = "nsys"
    tool = "nsys"
    extension = "nsys-rep"
    args_env = "RADTRACK_NSYS_ARGS"

    def wrap(self, argv: list[str]) -> list[str]:
        out = self._outdir()
        cmd = [self._exe(), "profile", "--output", str(out / REPORT_STEM), "--force-overwrite", "true",
               "--trace", "cuda,nvtx,osrt"]
        if self.nvtx_range:
            cmd += ["--capture-range=nvtx", f"--nvtx-capture={self.nvtx_range}",
                    "--capture-range-end=stop"]
        return [*cmd, *self._extra(), *argv]


class NcuListener(_Profiler):
    """Nsight Compute kernel profiles (every kernel, or those inside the NVTX range)."""

    name = "ncu"
    tool = "ncu"
    extension = "ncu-rep"
    args_env = "RADTRACK_NCU_ARGS"

    def wrap(self, argv: list[str]) -> list[str]:
        out = self._outdir()
        cmd = [self._exe(), "--export", str(out / REPORT_STEM), "--force-overwrite",
               "--target-processes", "all"]
        if self.nvtx_range:
            # the trailing "/" names a push/pop range, as opposed to a start/end range
            cmd += ["--nvtx", "--nvtx-include", f"{self.nvtx_range}/"]
        return [*cmd, *self._extra(), *argv]
