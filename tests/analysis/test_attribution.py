"""Known answers of co-location accounting (radtrack/compute/attribution.py)."""

from __future__ import annotations

import numpy as np
import pytest

from radtrack.compute.attribution import (
    IDLE,
    OTHER,
    GpuUse,
    account,
    account_gpu,
    split_energy,
    step_means,
    window_edges,
)
from radtrack.compute.device_energy import cumulative_energy

GPU = "GPU-558ac94e-f540-acd2-43d4-5a86d3074202"
T0 = 1_700_000_000.0


def _series(values, t0=T0, dt=1.0, n=10):
    t = t0 + dt * np.arange(1, n + 1)
    return t, np.full(n, float(values)) if np.isscalar(values) else np.asarray(values, float)


def _constant_gpu(watts=400.0, n=10, dt=0.1, counter_every=5.0):
    """Instantaneous power every dt s and an energy counter every counter_every s."""
    tp = T0 + np.arange(0, n + dt / 2, dt)
    tc = np.union1d(T0 + np.arange(0, n, counter_every), [T0 + n])  # and a final reading
    return {"power_w": (tp, np.full(len(tp), watts)), "energy_j": (tc, watts * (tc - T0))}


def _use(run, sm, mode="plain", n=10, **kw):
    readings = dict(_constant_gpu(n=n))
    if sm is not None:
        key = "proc_sm_util_pct" if mode == "plain" else "sm_active_pct"
        readings[key] = _series(sm, n=n)
    readings.update(kw.pop("extra", {}))
    return GpuUse(run=run, gpu=GPU, mode=mode, start=T0, end=T0 + n, readings=readings, **kw)


def test_two_processes_75_25_under_400_w_for_10_s_get_3000_and_1000_j():
    accounts = account([_use("a", 75), _use("b", 25)], T0, T0 + 10)
    acc = accounts[GPU]
    assert acc.method == "process-sm-util"
    assert acc.energy_j("a") == pytest.approx(3000.0, rel=1e-9)
    assert acc.energy_j("b") == pytest.approx(1000.0, rel=1e-9)
    assert acc.energy_j(OTHER) == pytest.approx(0.0, abs=1e-9)
    assert acc.energy_j(IDLE) == pytest.approx(0.0, abs=1e-9)
    assert acc.gpu_energy_j == pytest.approx(4000.0, rel=1e-9)


def test_other_processes_and_idle_time_sum_to_the_gpu_energy():
    # ours: 30 % and 20 %; every process together 70 %: 20 % belongs to someone else
    extra = {"all_procs_sm_util_pct": _series(70)}
    acc = account_gpu([_use("a", 30, extra=extra), _use("b", 20, extra=extra)],
                      window_edges(T0, T0 + 10))
    assert acc.energy_j("a") == pytest.approx(4000 * 30 / 70)
    assert acc.energy_j("b") == pytest.approx(4000 * 20 / 70)
    assert acc.energy_j(OTHER) == pytest.approx(4000 * 20 / 70)
    total = acc.energy_j("a") + acc.energy_j("b") + acc.energy_j(OTHER) + acc.energy_j(IDLE)
    assert total == pytest.approx(acc.gpu_energy_j, rel=1e-12)
    assert acc.share[OTHER].mean() == pytest.approx(20.0)


def test_shares_always_sum_to_the_gpu_energy_with_random_activity():
    rng = np.random.default_rng(7)
    for _ in range(25):
        n = int(rng.integers(3, 30))
        uses = []
        for run in "abc":
            sm = rng.uniform(0, 60, n) * (rng.uniform(size=n) > 0.3)
            mem = rng.uniform(0, 2000, n) * (rng.uniform(size=n) > 0.2)
            uses.append(_use(run, sm, n=n, extra={"proc_mem_used_mib": _series(mem, n=n),
                                                  "all_procs_sm_util_pct": _series(rng.uniform(0, 100, n), n=n)}))
        acc = account_gpu(uses, window_edges(T0, T0 + n))
        per_window = acc.energy.sum(axis=1).to_numpy()
        e = np.diff(cumulative_energy(uses[0], acc.edges))
        np.testing.assert_allclose(per_window, e, rtol=1e-12)
        assert acc.gpu_energy_j == pytest.approx(400.0 * n, rel=1e-9)


def test_a_window_where_nothing_ran_goes_to_the_holders_then_to_idle():
    runs, other, idle = split_energy(np.array([100.0, 100.0, 100.0]),
                                     np.zeros((2, 3)), np.zeros(3),
                                     np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    np.testing.assert_allclose(runs, [[50, 100, 0], [50, 0, 0]])
    np.testing.assert_allclose(idle, [0, 0, 100])
    np.testing.assert_allclose(other, 0)


def test_a_solo_run_keeps_the_whole_gpu_idle_moments_included():
    sm = np.array([0, 0, 50, 90, 90, 90, 90, 90, 0, 0], float)
    acc = account_gpu([_use("solo", sm)], window_edges(T0, T0 + 10))
    assert acc.method == "solo"
    assert acc.energy_j("solo") == pytest.approx(4000.0)
    assert acc.energy_j(IDLE) == 0.0


def test_mps_clients_share_the_server_by_the_named_rule_never_a_zero_reading():
    server = {"mps_sm_util_pct": _series(80), "all_procs_sm_util_pct": _series(80)}
    a = _use("a", None, mode="mps", thread_pct=75.0,
             extra={**server, "proc_mem_used_mib": _series(1222)})
    b = _use("b", None, mode="mps", thread_pct=25.0,
             extra={**server, "proc_mem_used_mib": _series(328)})
    edges = window_edges(T0, T0 + 10)
    equal = account_gpu([a, b], edges, mps_rule="equal")
    assert equal.method == "mps-equal"
    assert equal.energy_j("a") == pytest.approx(2000.0)
    assert equal.share["a"].mean() == pytest.approx(40.0)  # half the server's 80 %
    assert "MPS client" in equal.notes["a"]
    capped = account_gpu([a, b], edges, mps_rule="thread-cap")
    assert capped.energy_j("a") == pytest.approx(3000.0)
    assert capped.method == "mps-thread-cap"
    memory = account_gpu([a, b], edges, mps_rule="memory")
    assert memory.energy_j("a") == pytest.approx(4000 * 1222 / 1550)
    with pytest.raises(ValueError, match="unknown MPS rule"):
        account_gpu([a, b], edges, mps_rule="vibes")


def test_mig_instances_share_by_gpm_activity_times_slices():
    big = _use("big", 50, mode="mig", slices=3)  # 3/7 of the GPU at 50 %
    small = _use("small", 100, mode="mig", slices=1)  # 1/7 at 100 %
    acc = account_gpu([big, small], window_edges(T0, T0 + 10))
    assert acc.method == "mig-gpm-sm-active"
    assert acc.energy_j("big") == pytest.approx(4000 * 1.5 / 2.5)
    assert acc.energy_j("small") == pytest.approx(4000 * 1.0 / 2.5)


def test_without_per_process_readings_the_gpu_is_charged_by_holding_time():
    acc = account_gpu([_use("a", None), _use("b", None)], window_edges(T0, T0 + 10))
    assert acc.method == "held-time"
    assert acc.energy_j("a") == pytest.approx(2000.0)
    assert "no per-process" in acc.notes["a"]


def test_runs_on_two_gpus_each_get_only_their_own_gpu():
    a = _use("a", 90)
    b = _use("b", 90)
    b.gpu = "GPU-other"
    b.readings = {**b.readings, "energy_j": (b.readings["energy_j"][0], 2 * b.readings["energy_j"][1])}
    accounts = account([a, b], T0, T0 + 10)
    assert accounts[GPU].energy_j("a") == pytest.approx(4000.0)
    assert accounts["GPU-other"].energy_j("b") == pytest.approx(8000.0)
    assert "b" not in accounts[GPU].energy


def test_counter_intervals_are_shaped_by_the_power_and_keep_the_counter_total():
    # power steps from 100 W to 300 W at 2.5 s; the counter is read at 0 and 5 s only
    tp = T0 + np.arange(0, 5.01, 0.1)
    p = np.where(tp - T0 < 2.5, 100.0, 300.0)
    tc = np.array([T0, T0 + 5])
    use = GpuUse("a", GPU, "plain", T0, T0 + 5, {"power_w": (tp, p), "energy_j": (tc, np.array([0.0, 1000.0]))})
    cum = cumulative_energy(use, window_edges(T0, T0 + 5))
    e = np.diff(cum)
    assert e.sum() == pytest.approx(1000.0)  # the counter's total, not the power integral
    assert e[0] < e[-1]  # the windows follow the power
    assert e[0] == pytest.approx(1000.0 * 100 / 1000.0, rel=0.05)


def test_step_means_cover_the_time_since_the_previous_reading():
    t = T0 + np.array([1.0, 2.0, 3.0])
    v = np.array([10.0, 20.0, 30.0])
    out = step_means(t, v, np.array([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4]))
    np.testing.assert_allclose(out[:3], [10, 20, 30])
    assert np.isnan(out[3])


def test_bad_spans_and_mixed_gpus_are_refused_with_a_message():
    with pytest.raises(ValueError, match="end after it starts"):
        window_edges(T0, T0)
    a, b = _use("a", 10), _use("b", 10)
    b.gpu = "GPU-x"
    with pytest.raises(ValueError, match="several GPUs"):
        account_gpu([a, b], window_edges(T0, T0 + 10))


def test_run_uses_read_traces_tags_and_placement():
    import pandas as pd

    from radtrack.compute.gpu_uses import placement, run_uses

    assert placement("-") == ("plain", None, None)
    assert placement("MPS:30") == ("mps", 30.0, None)
    assert placement("mps") == ("mps", None, None)
    assert placement("3g.40gb") == ("mig", None, 3)
    t = T0 + np.arange(5.0)
    smi = pd.DataFrame({"time": t, "step": np.arange(5), "smi/gpu0/power_w": 100.0,
                        "smi/gpu0/energy_j": 100.0 * np.arange(5.0),
                        "smi/gpu1/power_w": 50.0, "smi/gpu1/energy_j": np.nan})
    dcgm = pd.DataFrame({"time": t, "step": np.arange(5), "dcgm/gpu0/sm_active_pct": 40.0})
    tags = {"radtrack.listener.smi.gpu0.uuid": "MIG-abc",
            "radtrack.listener.smi.gpu0.parent_uuid": GPU,
            "radtrack.listener.smi.gpu0.name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
            "radtrack.listener.smi.gpu1.uuid": "GPU-second"}
    uses = run_uses("r", {"smi": smi, "dcgm": dcgm}, tags, "3g.40gb", T0, T0 + 4)
    assert set(uses) == {"gpu0", "gpu1"}
    mig = uses["gpu0"]
    assert mig.gpu == GPU and mig.mode == "mig" and mig.slices == 3 and mig.gpu_slices == 7
    assert set(mig.readings) == {"power_w", "energy_j", "sm_active_pct"}
    assert "energy_j" not in uses["gpu1"].readings  # an all-NaN column is no reading
    # a scope without a GPU UUID tag cannot be accounted
    assert set(run_uses("r", {"smi": smi}, {"radtrack.listener.smi.gpu1.uuid": "G"}, "-", T0, T0 + 4)) == {"gpu1"}


def test_run_uses_prefer_the_drivers_power_samples():
    import pandas as pd

    from radtrack.compute.gpu_uses import run_uses

    lines = pd.DataFrame({"time": [T0, T0 + 1.0], "step": [0, 1], "smi/gpu0/power_w": [100.0, 100.0]})
    driver = pd.DataFrame({"time": T0 + np.arange(0, 1.0, 0.02), "step": np.arange(2, 52),
                           "smi/gpu0/power_sample_w": 300.0})
    smi = pd.concat([lines, driver], ignore_index=True)
    uses = run_uses("r", {"smi": smi}, {"radtrack.listener.smi.gpu0.uuid": GPU}, "-", T0, T0 + 1)
    t, v = uses["gpu0"].readings["power_w"]
    assert len(t) == 50 and (v == 300.0).all()
