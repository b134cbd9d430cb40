"""What every placement part (clocks, MIG, MPS, plain) offers WorkloadPlacement."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from radtrack.errors import PlacementError
from radtrack.spec import RunSpec

Log = Callable[[str], None]
COMMAND_TIMEOUT_S = 60.0


class Part:
    """One kind of GPU setup for a workload; ``teardown`` undoes exactly what ``setup`` did."""

    def describe(self) -> list[str]:
        return []

    def setup(self) -> None:
        """Raise PlacementError on failure, leaving a record of what exists for teardown."""

    def teardown(self) -> list[str]:
        """Undo what setup created; safe to call twice; returns what could not be undone."""
        return []

    def env_for(self, spec: RunSpec) -> dict[str, str]:
        return {}

    def planned_env(self, spec: RunSpec) -> dict[str, str]:
        """env_for as it will be, without anything set up (for --dry-run)."""
        return self.env_for(spec)

    def tags_for(self, spec: RunSpec) -> dict[str, str]:
        return {}

    def artifacts(self) -> list[Path]:
        return []


def run(args: list[str], *, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run a placement command without a shell.

    It gets its own session so that a second Ctrl-C at the terminal reaches radtrack, not
    the nvidia-smi call that is tearing a MIG instance down.
    """
    try:
        return subprocess.run(args, env=env, input=stdin, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True, check=False)
    except FileNotFoundError:
        raise PlacementError(f"{args[0]} not found on PATH; it comes with the NVIDIA driver")\
            from None
    except subprocess.TimeoutExpired:
        raise PlacementError(f"'{' '.join(args)}' did not finish within {timeout:g} s") from None


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return " ".join((proc.stdout + "\n" + proc.stderr).split())


def check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """Raise a PlacementError that says why ``what`` failed, naming refusals plainly."""
    if proc.returncode == 0:
        return
    text = output(proc)
    low = text.lower()
    command = " ".join(str(a) for a in proc.args)
    if "insufficient permissions" in low or "not permitted" in low or proc.returncode == 4:
        raise PlacementError(f"{what} was refused: insufficient permissions ('{command}' needs "
                             f"root; run radtrack as root or ask an administrator): {text}")
    if "not supported" in low or proc.returncode == 3:
        raise PlacementError(f"{what} is not supported on this GPU ('{command}'): {text}")
    raise PlacementError(f"{what} failed ('{command}' exited {proc.returncode}): {text}")
