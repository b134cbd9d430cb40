"""Energy error bars (radtrack/compute/energy_error.py), the activity power model
(radtrack/compute/activity_power.py) and the power sensor benchmark's analysis
(benchmarks/power_sensor_analysis.py) on synthetic traces from the documented sensor model
(radtrack/compute/sensor_model.py; tests/power_sensor_synthetic.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radtrack.compute import activity_power as ap
from radtrack.compute.energy_error import (
    BURSTY,
    H200,
    TOO_SHORT,
    SensorConstants,
    combine,
    for_gpu,
    interval,
    load_constants,
)
from radtrack.compute.energy_figures import gpu_models, run_figures
from radtrack.compute.sensor_model import SensorModel, counter_between, sense, square_wave
from radtrack.vocab import schema

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import power_sensor_analysis as psa  # noqa: E402
from power_sensor_synthetic import write_traces  # noqa: E402

IDLE, BUSY = 120.0, 690.0


def _sensed(period: float, duty: float, seconds: float = 40.0, drift: float = 1.0005):
    t = np.arange(0.0, seconds, 0.0005)
    p = square_wave(t, period * drift, duty, IDLE, BUSY)
    return t, p, sense(t, p, SensorModel(phase_s=0.013))


def test_the_model_sensor_aliases_a_load_near_its_period_and_not_a_steady_one():
    _, p, seen = _sensed(0.02, 0.25)
    truth = float(p.mean())
    watts = [counter_between(seen, a, a + 8) / 8 for a in (0, 8, 16, 24, 32)]
    assert np.std(watts) / np.mean(watts) > 0.05  # identical windows, different figures
    t = np.arange(0.0, 40.0, 0.0005)
    steady = sense(t, np.full(len(t), 400.0), SensorModel(phase_s=0.013))
    assert counter_between(steady, 8, 16) / 8 == pytest.approx(400.0, rel=1e-9)
    assert np.mean(watts) == pytest.approx(truth, rel=0.15)


def test_interval_widens_for_a_bursty_load_and_stays_narrow_for_a_steady_one():
    _, _, seen = _sensed(0.02, 0.25)
    samples = seen.samples_w[(seen.sample_t > 8) & (seen.sample_t < 16)]
    bursty = interval(8.0, samples, np.full(80, 25.0))
    steady = interval(8.0, np.full(400, 400.0), np.full(80, 100.0))
    assert steady.ci95_pct < 1.5 and not steady.flagged  # the counter steps of 0.1 s at both ends
    assert bursty.ci95_pct > 5.0 and bursty.reason.startswith(BURSTY)
    assert bursty.parts_pct["hidden"] > bursty.parts_pct["edges"]
    # the same bursty load over a longer window: narrower, as the sensor's phase drifts
    assert interval(600.0, samples, np.full(80, 25.0)).ci95_pct < bursty.ci95_pct / 5
    # a sensor that sees all of the time (window = update period) does not alias
    full = SensorConstants(avg_window_s=0.1)
    assert interval(8.0, samples, np.full(80, 25.0), constants=full).ci95_pct < 1.5


def test_a_window_shorter_than_the_minimum_is_flagged_too_short():
    short = interval(0.3, np.full(15, 400.0), np.full(3, 100.0))
    assert short.reason.startswith(TOO_SHORT) and "0.3 s" in short.reason
    assert short.parts_pct["edges"] == max(short.parts_pct.values())
    assert np.isnan(interval(1.0, np.array([]), None).ci95_pct)  # no power readings: no figure


def test_sensor_constants_from_the_environment_a_file_or_inline(tmp_path, monkeypatch):
    assert load_constants("") == SensorConstants()
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"constants": {"update_s": 0.05, "gpu": "X", "threshold_pct": 2}}))
    monkeypatch.setenv("RADTRACK_SENSOR_CONSTANTS", str(path))
    c = load_constants()
    assert (c.update_s, c.gpu, c.threshold_pct, c.avg_window_s) == (0.05, "X", 2.0, SensorConstants().avg_window_s)
    assert load_constants('{"alias_corr_s": 1.5}').alias_corr_s == 1.5
    with pytest.raises(ValueError, match=r"unknown sensor constant\(s\) \['updte_s'\]"):
        load_constants('{"updte_s": 1}')
    with pytest.raises(ValueError, match="update_s must be a number >= 0, got 'fast'"):
        load_constants('{"update_s": "fast"}')
    with pytest.raises(ValueError, match="no such file"):
        load_constants(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="not JSON"):
        load_constants("{oops")


def test_combine_adds_independent_errors_in_quadrature():
    assert combine([(100.0, 10.0), (100.0, 10.0)]) == pytest.approx(10 / np.sqrt(2))
    assert np.isnan(combine([(100.0, 10.0), (50.0, float("nan"))]))


def _activity(period: float, duty: float, seconds: float, every: float = 0.1):
    """GPM-like readings of a duty-cycled load: busy share of each read interval, in %."""
    t = np.arange(0.0, seconds + every / 2, every)
    fine = np.arange(0.0, seconds, 0.0005)
    on = square_wave(fine, period, duty, 0.0, 1.0) if duty < 1 else np.ones(len(fine))
    cum = np.concatenate(([0.0], np.cumsum(on) * 0.0005))
    busy = np.concatenate(([0.0], np.diff(np.interp(t, np.concatenate((fine, [seconds])), cum)) / every * 100))
    return t, busy


def test_activity_model_fitted_on_steady_stretches_gives_the_duty_cycle_energy():
    # 10 s idle, 10 s busy, then 20 s of a 20-ms load busy 25 % of the time
    t_idle, a_idle = _activity(1.0, 0.0, 10.0)
    t_busy, a_busy = _activity(1.0, 1.0, 10.0)
    t_burst, a_burst = _activity(0.02 * 1.0005, 0.25, 20.0)
    t = np.concatenate((t_idle, t_busy[1:] + 10, t_burst[1:] + 20))
    busy = np.concatenate((a_idle, a_busy[1:], a_burst[1:]))
    act = ap.activity_trace(t, {"gr_engine_active_pct": busy, "sm_active_pct": 0.8 * busy, "other": busy})
    assert set(act.values) == {"gr_engine_active_pct", "sm_active_pct"}
    st = np.arange(0.01, 40.0, 0.02)
    power = np.where(st < 10, IDLE, BUSY)
    power[st >= 20] = 300.0  # what an aliasing sensor reports of the bursts: not used in the fit
    model = ap.fit(act, st, power)
    assert model is not None and model.fitted_on == "steady stretches of this run"
    assert model.intercept_w == pytest.approx(IDLE, abs=1.0)
    assert list(model.slopes_w) == ["gr_engine_active_pct"]  # sm_active adds nothing here
    watts = [ap.energy_between(model, act, a, a + 4) / 4 for a in (20.0, 24.0, 28.0, 32.0, 36.0)]
    duty_model = IDLE + (BUSY - IDLE) * 0.25
    assert np.mean(watts) == pytest.approx(duty_model, rel=0.01)
    assert np.std(watts) / np.mean(watts) < 0.01
    # scaled to a counter over a long span; too short a span leaves it as it is
    assert ap.scaled(model, 1.1 * ap.energy_between(model, act, 0, 40), 0, 40, act, min_span_s=30).scale \
        == pytest.approx(1.1)
    assert ap.scaled(model, 1.0, 0, 40, act).scale == 1.0
    # nothing steady at two levels: the calibration given, else no model
    only_bursts = ap.activity_trace(t_burst, {"gr_engine_active_pct": a_burst})
    assert ap.fit(only_bursts, st[st < 20], np.full((st < 20).sum(), 300.0)) is None
    fallback = ap.fit(only_bursts, st[st < 20], np.full((st < 20).sum(), 300.0), fallback=ap.default_model())
    assert fallback is not None and fallback.fitted_on == "H100 defaults" and fallback.notes


def _frames(util: float, seconds: float = 30.0, watts: float = 300.0) -> dict[str, pd.DataFrame]:
    t = np.arange(0.0, seconds, 0.02)
    smi = pd.DataFrame({"time": t, "step": np.arange(len(t)), "smi/gpu0/power_sample_w": watts,
                        "smi/gpu0/gpu_util_pct": util,
                        "smi/gpu0/energy_j": np.where(np.arange(len(t)) % 250 == 0, watts * t, np.nan)})
    smi.loc[smi.index[-1], "smi/gpu0/energy_j"] = watts * t[-1]
    return {"smi": smi}


def test_run_figures_store_an_interval_per_gpu_and_flag_bursty_runs():
    key = schema.summary_key("smi/gpu0/energy_j")
    steady = run_figures(_frames(100.0))
    bursty = run_figures(_frames(25.0))
    assert steady[schema.ci_flag_key(key)] == 0.0 and steady[schema.ci_key(key)] < 1.0
    assert bursty[schema.ci_flag_key(key)] == 1.0 and bursty[schema.ci_key(key)] > 5.0
    assert schema.energy_model_key("gpu0") not in bursty  # no GPM: the counter stands alone
    assert schema.ci_key(key) == "summary/smi/gpu0/energy_j_ci95_pct"


def test_the_constants_follow_the_gpu_model_the_listener_declares(monkeypatch):
    monkeypatch.delenv("RADTRACK_SENSOR_CONSTANTS", raising=False)
    tags = {"radtrack.listener.smi.gpu0.name": "NVIDIA H200", "radtrack.listener.smi.gpu0.uuid": "GPU-1",
            "radtrack.listener.dcgm.gpu1.name": "NVIDIA H100 80GB HBM3", "radtrack.role": "row"}
    assert gpu_models(tags) == {"gpu0": "NVIDIA H200", "gpu1": "NVIDIA H100 80GB HBM3"}
    assert for_gpu("NVIDIA H200") is H200 and load_constants(gpu="NVIDIA H200") == H200
    assert for_gpu("NVIDIA H100 80GB HBM3") == SensorConstants() == for_gpu("Tesla T4") == for_gpu(None)
    # a MIG slice is measured by its parent's sensor; another board of the family is not
    assert for_gpu("NVIDIA H200 MIG 1g.18gb") is H200 and for_gpu("NVIDIA H200 NVL") == SensorConstants()
    # the environment replaces the measured constants field by field, for every GPU
    c = load_constants('{"threshold_pct": 2.0}', gpu="NVIDIA H200")
    assert (c.avg_window_s, c.lag_s, c.threshold_pct) == (H200.avg_window_s, H200.lag_s, 2.0)
    # the same 25 %-busy run: the H100's sensor sees 25 ms of every 100 ms (bursty, flagged),
    # the H200's all of it (the counter's steps and the floor remain)
    key = schema.ci_key(schema.summary_key("smi/gpu0/energy_j"))
    h100 = run_figures(_frames(25.0), models={"gpu0": "NVIDIA H100 80GB HBM3"})
    h200 = run_figures(_frames(25.0), models={"gpu0": "NVIDIA H200"})
    assert h100[key] > 5.0 and h200[key] < 0.5


def test_the_lag_term_widens_windows_over_slow_bursts_only():
    i = np.arange(100)  # 2 s of 20-ms samples
    slow = np.where(i % 50 < 12, 780.0, 124.0)  # 1-s period: the counter's lag matters
    fast = np.where(i % 5 == 0, 780.0, 124.0)  # 100-ms period: averaged within the lag
    wide, narrow = interval(2.0, slow, constants=H200), interval(2.0, fast, constants=H200)
    assert wide.parts_pct["lag"] > 3.0 and narrow.parts_pct["lag"] < 0.01
    assert wide.reason.startswith(BURSTY) and "lag" in wide.reason  # flag 1, with its cause
    assert interval(2.0, np.full(100, 400.0), constants=H200).parts_pct["lag"] == 0.0


@pytest.fixture(scope="module")
def synthetic_result(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("sensor")
    write_traces(out, [(0.005, 0.25, 17), (0.02, 0.25, 41), (0.1, 0.25, 11), (0.73, 0.25, 23)])
    return psa.analyse_dir(out)


def test_benchmark_analysis_recovers_the_model_sensor(synthetic_result):
    s = synthetic_result["sensor"]
    assert s["counter_update_s"] == pytest.approx(0.1, rel=0.01)
    assert s["sample_s"] == pytest.approx(0.02, rel=0.01)
    assert s["idle_w"] == pytest.approx(IDLE, rel=0.01) and s["busy_w"] == pytest.approx(BUSY, rel=0.01)
    assert s["avg_window_edges_s"] == pytest.approx(0.025, abs=0.012)  # 25 ms of every 100 ms
    rows = {(r["setting"], r["window_s"]): r for r in synthetic_result["table"]}
    assert {w for (name, w) in rows if name == "p20ms-d25"} == {0.5, 2.0, 8.0}
    target = rows[("p20ms-d25", 8.0)]
    assert target["windows"] == 5 and target["busy_fraction"] == pytest.approx(0.25, abs=0.005)
    assert target["counter_cv_pct"] > 5.0  # the counter aliases
    assert target["model_cv_pct"] < 1.0 and abs(target["model_bias_pct"]) < 2.0  # the model does not
    assert synthetic_result["target"]["met"]
    assert target["ci_covers_frac"] == 1.0 and target["ci95_pct"] > 1.96 * target["counter_cv_pct"] / 2
    c = synthetic_result["constants"]
    assert c["update_s"] == pytest.approx(0.1, rel=0.01) and c["swing_w"] == pytest.approx(BUSY - IDLE, rel=0.02)
    md = psa.markdown(synthetic_result)
    assert "| 20 ms (25 %) | 8.0 s | 5 |" in md and "Target (p20ms-d25" in md and "n/a" not in md.split("Target")[1]


def test_benchmark_analysis_without_gpm_says_so(tmp_path):
    write_traces(tmp_path, [(0.02, 0.25, 11)], gpm=False, windows=(0.5, 2.0))
    result = psa.analyse_dir(tmp_path)
    assert result["model"] is None and "GPM is not available" in result["note"]
    assert "GPM is not available" in (tmp_path / "power_sensor.md").read_text()
    assert json.loads((tmp_path / "sensor_constants.json").read_text())["constants"]["update_s"] > 0


def test_run_figures_add_the_activity_model_where_gpm_ran():
    # 10 s idle, 10 s busy, 20 s of a 20-ms load busy 25 %: GPM busy time per 0.1 s read
    frames = _frames(100.0, seconds=40.0)
    smi = frames["smi"]
    t = smi["time"].to_numpy()
    watts = np.where(t < 10, IDLE, np.where(t < 20, BUSY, IDLE + (BUSY - IDLE) * 0.25))
    smi["smi/gpu0/power_sample_w"] = np.where(t < 20, watts, 300.0)  # aliased samples of the bursts
    energy = np.concatenate(([0.0], np.cumsum(watts[1:] * np.diff(t))))
    smi["smi/gpu0/energy_j"] = np.where(smi["smi/gpu0/energy_j"].notna(), energy, np.nan)
    ta, busy = _activity(1.0, 0.0, 10.0)
    tb, full = _activity(1.0, 1.0, 10.0)
    tc, bursts = _activity(0.02 * 1.0005, 0.25, 20.0)
    gt = np.concatenate((ta, tb[1:] + 10, tc[1:] + 20))
    gpm = np.concatenate((busy, full[1:], bursts[1:]))
    frames["dcgm"] = pd.DataFrame({"time": gt, "step": np.arange(len(gt)),
                                   "dcgm/gpu0/gr_engine_active_pct": gpm})
    out = run_figures(frames)
    model_j = out[schema.energy_model_key("gpu0")]
    counter_j = energy[-1]
    assert model_j == pytest.approx(counter_j, rel=0.02)  # unscaled (40 s < 60 s): the fit's own level
    assert out[schema.ci_key(schema.summary_key("smi/gpu0/energy_j"))] > 1.0  # the bursts widen it


def test_docs_block_is_filled_by_the_table_generator(synthetic_result, tmp_path):
    doc = tmp_path / "analysis.md"
    doc.write_text(f"intro\n{psa.DOC_BEGIN}\nold\n{psa.DOC_END}\nafter\n")
    psa.update_docs(doc, synthetic_result, "benchmarks/results/x")
    text = doc.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("after\n")
    assert "| 20 ms (25 %) | 8.0 s | 5 |" in text and "`benchmarks/results/x`" in text
    psa.update_docs(doc, synthetic_result, "again")  # the block can be refilled
    assert text.count(psa.DOC_BEGIN) == doc.read_text().count(psa.DOC_BEGIN) == 1


def test_report_columns_combine_gpus_and_give_workloads_their_widest_row():
    from radtrack.analysis.energy_columns import energy_error_columns, workload_intervals

    m = "metric.summary/"
    runs = pd.DataFrame([
        {"run_id": "a", "experiment": "e", "workload": 3, f"{m}smi/gpu0/energy_j": 100.0,
         f"{m}smi/gpu0/energy_j_ci95_pct": 2.0, f"{m}smi/gpu0/energy_j_ci95_flag": 0.0,
         f"{m}attribution/gpu0/energy_j": 60.0, f"{m}attribution/gpu0/energy_j_ci95_pct": 2.0,
         f"{m}attribution/gpu0/energy_j_ci95_flag": 0.0,
         f"{m}smi/gpu1/energy_j": 100.0, f"{m}smi/gpu1/energy_j_ci95_pct": 30.0,
         f"{m}smi/gpu1/energy_j_ci95_flag": 1.0,
         f"{m}energy_model/gpu0/activity_energy_j": 95.0, f"{m}energy_model/gpu1/activity_energy_j": 90.0},
        {"run_id": "b", "experiment": "e", "workload": 3, f"{m}smi/gpu0/energy_j": 100.0,
         f"{m}smi/gpu0/energy_j_ci95_pct": 4.0, f"{m}smi/gpu0/energy_j_ci95_flag": 2.0},
        {"run_id": "c", "experiment": "e", "workload": 4, f"{m}smi/gpu0/energy_j": 50.0}])
    cols = energy_error_columns(runs).set_index("run_id")
    # run a: attributed 60 J (± 2 %) on gpu0 and its own gpu1 (no attribution: 100 J ± 30 %)
    assert cols.loc["a", "energy_j_ci95_pct"] == pytest.approx(np.hypot(60 * 2, 100 * 30) / 160)
    assert cols.loc["a", "energy_note"].endswith("bursty load near the sensor's period")
    assert cols.loc["a", "activity_energy_j"] == 185.0
    assert cols.loc["b", "energy_note"] == "window too short"  # 4 % is under the threshold
    assert np.isnan(cols.loc["c", "energy_j_ci95_pct"]) and cols.loc["c", "energy_note"] == ""
    workloads = pd.DataFrame({"experiment": ["e", "e"], "workload": [3, 4], "launch": ["", ""]})
    ci = workload_intervals(workloads, runs, cols.reset_index())
    assert ci.iloc[0] == pytest.approx(np.hypot(100 * 2, 100 * 30) / 200) and np.isnan(ci.iloc[1])
