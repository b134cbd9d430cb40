"""The energy interval's stale-reading term (radtrack/compute/energy_error.py
``reading_error_j``; issue 51): a counter reading may lag the true energy by up to one
sensor update, and a window interpolated between two readings far apart carries that
error in proportion to its share of the gap. The case is the H200's (split-3): a run whose
first reading was idle and whose last, at 700 W, was 0.09 s stale, 13 s after it; a 7-s
window of steady power inside that gap is read 0.7 % short, outside the interval without
the term and inside it with it. Through the code-window table (radtrack/postrun/window_energy.py)
over an smi frame, as the launcher joins them after a run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.attribution import GpuUse
from radtrack.compute.energy_error import H200, interval, reading_error_j
from radtrack.compute.energy_figures import gpu_energies
from radtrack.postrun.window_energy import window_table

IDLE, BUSY, STALE_S = 80.0, 700.0, 0.09
READINGS = np.array([0.5, 13.9])  # the smi listener starved: two counter reads 13.4 s apart


def _trace() -> tuple[pd.DataFrame, float]:
    """An smi frame (power every 20 ms, the counter twice, the last read STALE_S late) and the
    true energy of the window [5, 12] s."""
    t = np.round(np.arange(0.0, 14.0, 0.02), 3)
    p = np.where(t < 1.0, IDLE, BUSY)
    true_j = np.concatenate(([0.0], np.cumsum(np.diff(t) * (p[1:] + p[:-1]) / 2)))
    counter = np.interp(READINGS - [0.0, STALE_S], t, true_j)  # the last read shows 0.09 s ago
    frame = pd.DataFrame({"time": t, "step": np.arange(len(t)), "smi/gpu0/power_w": p})
    reads = pd.DataFrame({"time": READINGS, "step": [0, 1], "smi/gpu0/energy_j": counter})
    frame = pd.concat([frame, reads]).sort_values("time", kind="stable").reset_index(drop=True)
    return frame, float(np.interp(12.0, t, true_j) - np.interp(5.0, t, true_j))


def test_a_stale_reading_spread_over_a_long_gap_is_inside_the_window_interval() -> None:
    frame, true_j = _trace()
    frames = {"smi": frame}
    part = frame.dropna(subset=["smi/gpu0/power_w"])
    reads = frame.dropna(subset=["smi/gpu0/energy_j"])
    use = GpuUse("run", "GPU-0", "plain", 0.0, 14.0, {
        "power_w": (part["time"].to_numpy(), part["smi/gpu0/power_w"].to_numpy()),
        "energy_j": (reads["time"].to_numpy(), reads["smi/gpu0/energy_j"].to_numpy())}, refresh_s=0.1)
    table = window_table([{"name": "epoch", "start": 5.0, "end": 12.0}], "run", {"gpu0": use}, frames, {},
                         {"gpu0": "NVIDIA H200"})
    row = table.iloc[0]
    error_pct = 100 * abs(row["gpu_energy_j"] / true_j - 1)
    assert 0.5 < error_pct < 1.0  # the reading's 63 J, 7/13.4 of it in the window
    assert error_pct <= row["gpu_energy_j_ci95_pct"] <= 1.5  # held, and still narrow for 7 s

    # the interval without the term (the one before issue 51's re-check) misses it
    gpu = gpu_energies(frames)[0]
    with_term = gpu.interval(5.0, 12.0, H200)
    without = interval(7.0, part["smi/gpu0/power_w"].to_numpy()[(part["time"] >= 5) & (part["time"] <= 12)],
                       constants=H200)
    assert without.ci95_pct < error_pct
    assert with_term.ci95_pct == pytest.approx(row["gpu_energy_j_ci95_pct"])
    assert with_term.parts_pct["readings"] > with_term.parts_pct["edges"]


def test_the_reading_term_cancels_a_common_lag_and_shrinks_with_the_gap() -> None:
    """Readings at one power: only the lags' spread counts (the mean cancels); the same
    window inside a gap twice as long carries half the error; an edge on a reading takes its
    error whole; fewer than two readings: nothing to say."""
    steady = reading_error_j(2.0, 5.0, np.array([0.0, 10.0]), np.array([500.0, 500.0]), 0.1)
    assert steady == pytest.approx(0.3 * 500 * 0.1 * math.sqrt(2 / 12))
    assert reading_error_j(2.0, 5.0, np.array([0.0, 20.0]), np.array([500.0, 500.0]), 0.1) == pytest.approx(steady / 2)
    idle_then_busy = reading_error_j(2.0, 5.0, np.array([0.0, 10.0]), np.array([80.0, 700.0]), 0.1)
    assert idle_then_busy == pytest.approx(math.hypot(0.3 * 620 * 0.1 / 2, 0.3 * 0.1 * math.hypot(80, 700) / math.sqrt(12)))
    on_readings = reading_error_j(0.0, 10.0, np.array([0.0, 10.0, 20.0]), np.full(3, 500.0), 0.1)
    assert on_readings == pytest.approx(500 * 0.1 * math.sqrt(2 / 12))
    assert reading_error_j(2.0, 5.0, np.array([1.0]), np.array([500.0]), 0.1) == 0.0
