"""Co-located runs' shares of the host's CPU and DRAM energy, by their processes' CPU time
(radtrack/compute/cpu_energy_share.py)."""

from __future__ import annotations

import numpy as np
import pytest

from radtrack.compute.cpu_energy_share import IDLE, OTHER, cpu_seconds, split

T = np.arange(0.0, 11.0)  # readings every second for 10 s
ENERGY = (T, 50.0 * T)  # 50 W on the CPU side


def _flat(pct: float, t: np.ndarray = T) -> tuple[np.ndarray, np.ndarray]:
    return t, np.full(len(t), pct)


def test_cpu_seconds_is_the_integral_and_stays_flat_outside_the_span():
    t, pct = np.array([2.0, 4.0]), np.array([100.0, 300.0])
    got = cpu_seconds(t, pct, np.array([0.0, 2.0, 4.0, 9.0]))
    np.testing.assert_allclose(got, [0.0, 0.0, 4.0, 4.0])


def test_two_runs_split_by_cpu_time_and_the_rest_is_other():
    # A uses 3 cores, B 1 core, the host 5 cores busy: 3/5, 1/5, other 1/5 of 500 J
    out = split(ENERGY, {"A": _flat(300), "B": _flat(100)}, host_busy=_flat(500))
    assert out["A"] == pytest.approx(300) and out["B"] == pytest.approx(100)
    assert out[OTHER] == pytest.approx(100) and out[IDLE] == 0
    assert sum(out.values()) == pytest.approx(500)  # nothing lost, nothing counted twice


def test_a_run_that_ends_early_gets_only_its_seconds():
    a = (np.arange(0.0, 6.0), np.full(6, 200.0))  # A's tree exists for 5 s, 2 cores
    out = split(ENERGY, {"A": a, "B": _flat(200)})  # the host's busy time unknown: the runs'
    assert out["A"] == pytest.approx(125) and out["B"] == pytest.approx(375)
    assert out[OTHER] == pytest.approx(0) and sum(out.values()) == pytest.approx(500)


def test_no_cpu_time_at_all_is_idle_and_runs_above_the_host_reading_stand_for_it():
    out = split(ENERGY, {"A": _flat(0)}, host_busy=_flat(0))
    assert out == {"A": 0.0, OTHER: 0.0, IDLE: pytest.approx(500)}
    # the host read 100 % busy while the run's own tree read 150 %: the runs' sum stands
    out = split(ENERGY, {"A": _flat(150)}, host_busy=_flat(100))
    assert out["A"] == pytest.approx(500) and out[OTHER] == pytest.approx(0)


def test_too_few_energy_readings_give_zero_not_nan():
    assert split((np.array([1.0]), np.array([5.0])), {"A": _flat(100)}) == {"A": 0.0, OTHER: 0.0, IDLE: 0.0}
