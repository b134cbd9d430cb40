"""A code window's energy of the host's CPU side (issue 40): a run that read a GPU and the
host's RAPL package gets the package's energy over the window as ``cpu_energy_j``, apart from
the GPU's ``gpu_energy_j`` and its ``power_w``; its attributed ``energy_j`` holds both, like
the run's. Known answers on the join (radtrack/postrun/window_energy.py); through the CLI on a
recorded RAPL tree: tests/listeners/test_energy_sources_e2e.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.attribution import GpuUse, account
from radtrack.postrun.window_energy import window_table

T0 = 1_700_000_000.0
TP = T0 + np.arange(0, 10.05, 0.1)


def _use(gpu: str, watts: float) -> GpuUse:
    return GpuUse("r", gpu, "plain", T0, T0 + 10,
                  {"power_w": (TP, np.full(len(TP), watts)), "energy_j": (TP, watts * (TP - T0))})


def _frames() -> dict[str, pd.DataFrame]:
    """The traces the uses come from: what tells a GPU from the host's CPU side (by role)."""
    steps = np.arange(len(TP))
    return {"smi": pd.DataFrame({"time": TP, "step": steps, "smi/gpu0/power_w": 200.0,
                                 "smi/gpu0/energy_j": 200.0 * (TP - T0)}),
            "rapl": pd.DataFrame({"time": TP, "step": steps, "rapl/pkg0/energy_j": 50.0 * (TP - T0),
                                  "rapl/pkg0/power_w": 50.0, "rapl/pkg0/core/energy_j": 30.0 * (TP - T0)})}


def test_a_window_gets_the_hosts_cpu_energy_apart_from_the_gpus() -> None:
    uses = {"gpu0": _use("GPU-1", 200.0), "pkg0": _use("host:pkg0", 50.0)}
    accounts = account(list(uses.values()), T0, T0 + 10)
    table = window_table([{"name": "w", "step": 0, "start": T0 + 2, "end": T0 + 5}], "r", uses,
                         _frames(), accounts)
    row = table.iloc[0]
    assert row["gpu_energy_j"] == pytest.approx(600.0)  # the GPU alone
    assert row["power_w"] == pytest.approx(200.0)
    assert row["cpu_energy_j"] == pytest.approx(150.0)  # the package; its core rail not added
    assert row["energy_j"] == pytest.approx(750.0)  # solo: both, whole


def test_a_cpu_only_window_has_no_gpu_figure_and_a_gpu_only_one_no_cpu_figure() -> None:
    frames = _frames()
    cpu = window_table([{"name": "w", "step": 0, "start": T0 + 2, "end": T0 + 5}], "r",
                       {"pkg0": _use("host:pkg0", 50.0)}, {"rapl": frames["rapl"]}, {})
    assert cpu.iloc[0]["cpu_energy_j"] == pytest.approx(150.0)
    assert pd.isna(cpu.iloc[0].get("gpu_energy_j")) and pd.isna(cpu.iloc[0].get("power_w"))
    gpu = window_table([{"name": "w", "step": 0, "start": T0 + 2, "end": T0 + 5}], "r",
                       {"gpu0": _use("GPU-1", 200.0)}, {"smi": frames["smi"]}, {})
    assert gpu.iloc[0]["gpu_energy_j"] == pytest.approx(600.0)
    assert pd.isna(gpu.iloc[0].get("cpu_energy_j"))


def test_a_window_the_hosts_counters_cannot_resolve_keeps_its_gpu_figures() -> None:
    """RAPL read every 1 s, the GPU every 0.1 s: a 0.5-s window has the GPU's energy, not the
    host's (nor the attributed total over both); not flagged, as something was resolved."""
    slow = T0 + np.arange(0, 10.5, 1.0)
    host = GpuUse("r", "host:pkg0", "plain", T0, T0 + 10,
                  {"power_w": (slow, np.full(len(slow), 50.0)), "energy_j": (slow, 50.0 * (slow - T0))})
    uses = {"gpu0": _use("GPU-1", 200.0), "pkg0": host}
    windows = [{"name": "short", "step": 0, "start": T0 + 2, "end": T0 + 2.5},
               {"name": "tiny", "step": 0, "start": T0 + 3, "end": T0 + 3.02}]
    table = window_table(windows, "r", uses, _frames(), account(list(uses.values()), T0, T0 + 10))
    short, tiny = table.iloc[0], table.iloc[1]
    assert short["gpu_energy_j"] == pytest.approx(100.0) and not short["below_resolution"]
    assert pd.isna(short.get("cpu_energy_j")) and pd.isna(short.get("energy_j"))
    assert tiny["below_resolution"] and pd.isna(tiny["gpu_energy_j"])  # neither resolves it
