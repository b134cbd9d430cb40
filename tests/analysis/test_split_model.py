"""The solo-model split and every split's bound (radtrack/compute/split_model.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radtrack.compute import split_model
from radtrack.compute.attribution import IDLE, OTHER, GpuAccount


def _account(method: str, a: list[float], b: list[float], edges: list[float]) -> GpuAccount:
    mid = (np.array(edges[:-1]) + np.array(edges[1:])) / 2
    energy = pd.DataFrame({"a": a, "b": b, OTHER: 1.0, IDLE: 0.0}, index=mid)
    share = pd.DataFrame({"a": [60.0] * len(a), "b": [40.0] * len(a), OTHER: 0.0}, index=mid)
    return GpuAccount("GPU-x", method, np.array(edges, dtype=float), energy, share, {"a": "n"})


def test_twins_doing_the_same_work_split_evenly_whatever_the_signal_said():
    # per-process SM samples gave 60/40 (the H200's time-sliced twins were 42/58)
    acc = _account("process-sm-util", [60.0, 60.0], [40.0, 40.0], [0.0, 1.0, 2.0])
    out = split_model.resplit(acc, {"a": 300.0, "b": 300.0}, {"a": (0.0, 2.0), "b": (0.0, 2.0)})
    assert out.method == split_model.SOLO_MODEL
    assert out.energy_j("a") == pytest.approx(100.0) and out.energy_j("b") == pytest.approx(100.0)
    assert out.energy_j(OTHER) == acc.energy_j(OTHER)  # other and idle stay as measured
    assert out.gpu_energy_j == pytest.approx(acc.gpu_energy_j)
    assert out.notes == {}  # the signal's note no longer describes the split


def test_caps_follow_the_work_and_a_run_alone_keeps_its_windows():
    acc = _account("mps-thread-cap", [50.0, 50.0, 100.0], [50.0, 50.0, 0.0], [0.0, 1.0, 2.0, 3.0])
    # a did 70 % of the work while b ran (b ended at 2 s), then ran alone at 100 units/s:
    # its mean rate 80; same J per unit. The mean rate is not a's rate in the shared windows:
    # weighted by it alone they would go 80:30; fitted to the runs' serial energy, 70:30
    out = split_model.resplit(acc, {"a": 80.0, "b": 30.0}, {"a": (0.0, 3.0), "b": (0.0, 2.0)})
    assert out.energy["a"].to_numpy() == pytest.approx([70.0, 70.0, 100.0])
    assert out.energy["b"].to_numpy() == pytest.approx([30.0, 30.0, 0.0])
    assert out.energy.sum(axis=1).to_numpy() == pytest.approx(acc.energy.sum(axis=1).to_numpy())


def test_twins_whose_spans_differ_get_the_same_j_per_unit():
    # identical twins at the same rate; b's span ends 0.6 s after a's (its stop drained a
    # queue, no block logged): its work counts that time at its mean rate, so it must be
    # charged in proportion, not merely the GPU's energy while it was alone (issue 51:
    # MPS:50 twins 4.8 % apart on an H200 with the per-window weights alone)
    edges = [0.0, 1.0, 2.0, 3.0, 3.4, 4.0]
    acc = _account("mps-thread-cap", [300.0, 300.0, 300.0, 120.0, 0.0], [300.0, 300.0, 300.0, 120.0, 100.0], edges)
    q, spans = {"a": 300.0, "b": 300.0}, {"a": (0.0, 3.4), "b": (0.0, 4.0)}
    out = split_model.resplit(acc, q, spans)
    per_unit = {r: out.energy_j(r) / (q[r] * (spans[r][1] - spans[r][0])) for r in "ab"}
    assert per_unit["a"] == pytest.approx(per_unit["b"], rel=1e-5)
    assert out.energy["b"].iloc[-1] == pytest.approx(100.0)  # b alone keeps its window
    assert out.energy.sum(axis=1).to_numpy() == pytest.approx(acc.energy.sum(axis=1).to_numpy())
    # a start offset and three twins: the same
    edges3 = [0.0, 0.5, 1.0, 2.0, 3.0, 3.5]
    base = {r: [100.0] * 5 for r in "abc"}
    acc3 = GpuAccount("GPU-x", "process-sm-util", np.array(edges3), pd.DataFrame({**base, OTHER: 0.0, IDLE: 0.0}),
                      pd.DataFrame({r: [30.0] * 5 for r in "abc"}))
    q3, spans3 = {r: 200.0 for r in "abc"}, {"a": (0.0, 3.0), "b": (0.5, 3.5), "c": (0.0, 3.5)}
    out3 = split_model.resplit(acc3, q3, spans3)
    units = [out3.energy_j(r) / (q3[r] * (spans3[r][1] - spans3[r][0])) for r in "abc"]
    assert units == pytest.approx([units[0]] * 3, rel=1e-5)


def test_without_a_rate_for_every_run_the_account_stays():
    acc = _account("mps-thread-cap", [50.0], [50.0], [0.0, 1.0])
    assert split_model.resplit(acc, {"a": 70.0}, {"a": (0.0, 1.0), "b": (0.0, 1.0)}) is acc


def test_bounds_assumed_splits_are_flagged_wide_and_the_model_from_baseline_spread():
    acc = _account("mps-thread-cap", [50.0], [50.0], [0.0, 1.0])
    bound, assumed = split_model.split_bound(acc.method, "a", acc)
    assert assumed and bound == split_model.ASSUMED_BOUND_PCT["mps"]
    assert split_model.split_bound("process-sm-util", "a", acc) == (46.0, True)
    model = split_model.resplit(acc, {"a": 1.0, "b": 1.0}, {"a": (0.0, 1.0), "b": (0.0, 1.0)})
    # two repeats of 4 % CV each side: 1.96 x 0.5 x sqrt(2 x 4^2 / 2)
    bound, assumed = split_model.split_bound(model.method, "a", model, {"a": (4.0, 2), "b": (4.0, 2)})
    assert not assumed and bound == pytest.approx(1.96 * 0.5 * 4.0 * np.sqrt(2) / np.sqrt(2))
    # one solo run: the largest CV measured on the H200 stands in
    wide, _ = split_model.split_bound(model.method, "a", model, {"a": (float("nan"), 1)})
    assert wide == pytest.approx(1.96 * 0.5 * np.sqrt(2) * split_model.DEFAULT_SOLO_CV_PCT)
    assert split_model.split_bound("solo", "a", acc) == (0.0, False)


def test_rates_come_from_solo_j_per_unit_times_throughput():
    inter = pd.DataFrame([
        {"run_id": "a", "work_unit": "sample", "solo_energy_per_unit_j": 2.0, "throughput": 50.0},
        {"run_id": "b", "work_unit": "run", "solo_energy_per_unit_j": 900.0, "throughput": np.nan},
        {"run_id": "c", "work_unit": "sample", "solo_energy_per_unit_j": np.nan, "throughput": 5.0}])
    assert split_model.rates(inter) == {"a": 100.0}


def test_with_split_widens_the_counter_interval_and_flags_an_assumed_split():
    acc = _account("process-sm-util", [60.0], [40.0], [0.0, 1.0])
    split_model.bound_all(acc)
    assert acc.split_bounds == {"a": (46.0, True), "b": (46.0, True)}
    ci, flag = split_model.with_split(3.0, 1.0, acc, "a")
    assert ci == pytest.approx(np.hypot(3.0, 46.0)) and flag == split_model.SPLIT_ASSUMED_FLAG
    assert split_model.with_split(float("nan"), 0.0, acc, "a") == (46.0, split_model.SPLIT_ASSUMED_FLAG)
    # a run the account has no bound for (a solo GPU): the counter's interval and flag as they are
    assert split_model.with_split(3.0, 2.0, acc, "c") == (3.0, 2.0)


def test_the_workloads_change_against_serial_joins_the_bound_and_flags_it_beyond_5_pct():
    # both runs at 100 W solo-equivalent for 2 s: serial 400 J; the GPU gave them 480 J (+20 %,
    # the H200's sgemm + euclidean under MPS): each run's J per unit is +20 % against solo
    acc = _account("mps-thread-cap", [150.0, 150.0], [90.0, 90.0], [0.0, 1.0, 2.0])
    q, spans = {"a": 100.0, "b": 100.0}, {"a": (0.0, 2.0), "b": (0.0, 2.0)}
    model = split_model.resplit(acc, q, spans)
    assert split_model.serial_change_pct(model, q, spans) == pytest.approx(20.0)
    plain = split_model.split_bound(model.method, "a", model)[0]
    split_model.bound_all(model, None, q, spans)
    assert model.split_bounds["a"] == (pytest.approx(np.hypot(plain, 20.0)), False)
    assert model.split_bounds["a"][0] > 20.0  # the interval holds the run's deviation
    assert model.notes["a"].startswith(split_model.CHANGE_NOTE) and "+20.0 %" in model.notes["a"]
    assert split_model.with_split(1.0, 0.0, model, "a")[1] == split_model.CHANGE_FLAG
    # within 5 %: in the bound, not flagged
    small = split_model.resplit(_account("mps-thread-cap", [102.0, 102.0], [102.0, 102.0], [0.0, 1.0, 2.0]), q, spans)
    split_model.bound_all(small, None, q, spans)
    assert "a" not in small.notes and split_model.with_split(1.0, 0.0, small, "a")[1] == 0.0


def test_where_no_factors_fit_the_windows_weights_stay_and_each_runs_deviation_joins_its_bound():
    # a held two windows alone for 800 J, more than its proportion of the 1,100 J (550):
    # no factors fit; the shared window goes by q alone, and each run's own deviation
    # from its serial energy is in its interval
    acc = _account("mps-thread-cap", [400.0, 400.0, 150.0], [0.0, 0.0, 150.0], [0.0, 1.0, 2.0, 3.0])
    q, spans = {"a": 100.0, "b": 300.0}, {"a": (0.0, 3.0), "b": (2.0, 3.0)}
    out = split_model.resplit(acc, q, spans)
    assert out.energy["a"].to_numpy() == pytest.approx([400.0, 400.0, 75.0])
    assert out.energy["b"].to_numpy() == pytest.approx([0.0, 0.0, 225.0])
    split_model.bound_all(out, None, q, spans)
    for run, serial in (("a", 300.0), ("b", 300.0)):
        deviation = 100 * (out.energy_j(run) / serial - 1)
        assert out.split_bounds[run][0] >= abs(deviation)
    assert "this run: +191.7 %" in out.notes["a"]
