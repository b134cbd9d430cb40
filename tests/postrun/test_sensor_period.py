"""A device's sensor period is what its listener declares (``Series.refresh_s``), never one
GPU model's constant: code windows shorter than it are below resolution, and the energy
interval of a model without measured constants counts the sensor's updates by it; a listener
that declares none gets the cautious 1-s default (issue 48)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.energy_error import KNOWN, SensorConstants, for_gpu
from radtrack.compute.energy_figures import gpu_energies
from radtrack.compute.gpu_uses import run_uses
from radtrack.postrun.window_energy import resolution_s, window_table
from radtrack.vocab import meaning
from radtrack.vocab.series import DEFAULT_REFRESH_S, Series

T0 = 1_700_000_000.0
TP = T0 + np.arange(0, 10.05, 0.05)  # readings every 50 ms: finer than either sensor


def _frames() -> dict[str, pd.DataFrame]:
    steps = np.arange(len(TP))
    return {"smi": pd.DataFrame({"time": TP, "step": steps, "smi/gpu0/power_w": 200.0,
                                 "smi/gpu0/energy_j": 200.0 * (TP - T0)}),
            "vendorx": pd.DataFrame({"time": TP, "step": steps, "vendorx/gpu1/power_w": 100.0})}


@pytest.fixture
def vendorx(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A listener that declares its GPU's power but no sensor period (every built-in
    power source declares one)."""
    declared = meaning._declared
    power = Series("vendorx/gpu<i>/power_w", "W", "device_power", "device", "GPU power")
    monkeypatch.setattr(meaning, "_declared", lambda name: (power,) if name == "vendorx" else declared(name))
    yield
    meaning._describe.cache_clear()  # no other test sees vendorx's keys as declared


def test_windows_resolve_what_each_listener_declares(vendorx: None) -> None:
    tags = {"radtrack.listener.smi.gpu0.uuid": "GPU-1", "radtrack.listener.smi.gpu0.name": "NVIDIA H200",
            "radtrack.listener.vendorx.gpu1.uuid": "X-2"}
    uses = run_uses("r", _frames(), tags, "-", T0, T0 + 10)
    gpu, other = uses["gpu0"], uses["gpu1"]
    assert gpu.refresh_s == 0.1 and resolution_s(gpu) == pytest.approx(0.1)  # smi's: 100 ms
    assert other.refresh_s == DEFAULT_REFRESH_S == 1.0  # vendorx declares none
    assert resolution_s(other) == pytest.approx(1.0)
    windows = [{"name": "w", "step": 0, "start": T0 + 2, "end": T0 + 2.5}]
    gpu_only = window_table(windows, "r", {"gpu0": gpu}, _frames(), {})
    assert not gpu_only.iloc[0]["below_resolution"] and gpu_only.iloc[0]["gpu_energy_j"] == pytest.approx(100.0)
    other_only = window_table(windows, "r", {"gpu1": other}, _frames(), {})
    assert other_only.iloc[0]["below_resolution"]  # 0.5 s under the 1-s default


def test_an_unmeasured_models_interval_counts_updates_by_the_declared_period() -> None:
    h100 = SensorConstants()
    assert for_gpu("NVIDIA H200") is KNOWN["NVIDIA H200"]  # measured: its own, whatever declared
    assert for_gpu("NVIDIA H200", refresh_s=1.0) is KNOWN["NVIDIA H200"]
    assert for_gpu("AMD Instinct MI300X") == h100  # no period declared: the widest measured
    assert for_gpu("AMD Instinct MI300X", refresh_s=0.001) == h100  # never narrower than measured
    slow = for_gpu("AMD Instinct MI300X", refresh_s=1.0)
    assert (slow.update_s, slow.gpu) == (1.0, "AMD Instinct MI300X")
    assert slow.avg_window_s / slow.update_s == pytest.approx(h100.avg_window_s / h100.update_s)
    # the counter's declared period reaches its interval through gpu_energies
    gpu = next(g for g in gpu_energies(_frames()) if g.scope == "gpu0")
    assert gpu.refresh_s == 0.1 and gpu.constants("AMD Instinct MI300X").update_s == 0.1
    with pytest.raises(ValueError, match="refresh_s must be > 0 s, got 0"):
        Series("x/gpu<i>/power_w", "W", "device_power", "device", "GPU power", refresh_s=0)
