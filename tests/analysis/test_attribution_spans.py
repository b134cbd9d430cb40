"""Co-location accounting over runs whose readings cover only their own spans (issue 38): a
run's listeners stop at its end, so the GPU's energy and every process's activity after it
come from its partners' readings (radtrack/compute/attribution.py)."""

from __future__ import annotations

import numpy as np
import pytest

from radtrack.compute.attribution import (
    IDLE,
    OTHER,
    GpuUse,
    account,
    window_edges,
)
from radtrack.compute.device_energy import gpu_window_energy

GPU = "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"
T0 = 1_700_000_000.0
WATTS = 400.0


def _use(run: str, start: float, end: float, sm: float, everything: float | None = None) -> GpuUse:
    """A run on the 400 W GPU from ``start`` to ``end`` (s after T0), read every 0.1 s (power,
    counter from 0 J at its start, its processes' SM use, every process's) within its span."""
    tp = T0 + np.arange(start, end + 1e-9, 0.1)
    tc = np.union1d(T0 + np.arange(start, end, 5.0), [T0 + end])
    ts = T0 + np.arange(start + 1, end + 1e-9, 1.0)
    readings = {"power_w": (tp, np.full(len(tp), WATTS)), "energy_j": (tc, WATTS * (tc - T0 - start)),
                "proc_sm_util_pct": (ts, np.full(len(ts), sm)),
                "proc_mem_used_mib": (ts, np.full(len(ts), 500.0))}
    if everything is not None:
        readings["all_procs_sm_util_pct"] = (ts, np.full(len(ts), everything))
    return GpuUse(run=run, gpu=GPU, mode="plain", start=T0 + start, end=T0 + end, readings=readings)


def test_the_gpu_is_measured_to_the_workload_end_from_the_run_that_outlives_the_other():
    a, b = _use("a", 0, 4, 75), _use("b", 0, 10, 25)
    acc = account([a, b], T0, T0 + 10)[GPU]
    assert acc.gpu_energy_j == pytest.approx(WATTS * 10, rel=1e-6)
    # both ran 0-4 s at 75/25: 1200 + 400 J; b alone after: the GPU's 2400 J
    assert acc.energy_j("a") == pytest.approx(1200, rel=1e-6)
    assert acc.energy_j("b") == pytest.approx(400 + 2400, rel=1e-6)
    assert acc.energy_j("a") + acc.energy_j("b") + acc.energy_j(OTHER) + acc.energy_j(IDLE) == \
        pytest.approx(acc.gpu_energy_j, rel=1e-9)


def test_the_union_of_readings_covers_a_window_each_run_covers_in_part():
    # a reads 0-4.5 s, b 4.2-9 s: the window 4-5 s is a's to 4.5 s, b's after
    a, b = _use("a", 0, 4.5, 50), _use("b", 4.2, 9, 50)
    edges = window_edges(T0, T0 + 9)
    e = gpu_window_energy([a, b], edges)
    assert e == pytest.approx(np.full(9, WATTS), rel=1e-6)


def test_readings_outside_a_runs_span_do_not_count_for_it():
    # a store written before runs were cut to their spans: a's readings go on after its end
    a, b = _use("a", 0, 10, 75), _use("b", 0, 10, 25)
    a.end = T0 + 4
    edges = window_edges(T0, T0 + 10)
    e = gpu_window_energy([a], edges)
    assert np.nansum(e) == pytest.approx(WATTS * 4, rel=1e-6) and np.isnan(e[4:]).all()
    acc = account([a, b], T0, T0 + 10)[GPU]
    assert acc.energy_j("a") == pytest.approx(1200, rel=1e-6)


def test_other_processes_are_seen_after_a_run_ended_through_its_partner():
    # every process on the GPU: 90 %; ours 60 + 20 while both run, then 20 alone
    a, b = _use("a", 0, 4, 60, everything=90), _use("b", 0, 10, 20, everything=90)
    acc = account([a, b], T0, T0 + 10)[GPU]
    share = acc.share[OTHER].to_numpy()
    assert share[1:4] == pytest.approx(10.0)  # 90 - 60 - 20, both reading every process
    assert share[5:] == pytest.approx(70.0)  # 90 - 20, from b's reading alone
    total = acc.energy_j("a") + acc.energy_j("b") + acc.energy_j(OTHER) + acc.energy_j(IDLE)
    assert total == pytest.approx(acc.gpu_energy_j, rel=1e-9)
