"""The interference intervals' arithmetic (docs/analysis.md, Intervals from repeats), on
hand-made frames: the delta method and its t quantile, recovering a row's spread from its
bounds, the workload figures' propagation, and the launcher's closing line and the page's
text with and without repeats. The CLI path: test_interference_intervals_e2e.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student

from radtrack.compute.colocation import _intervals, figures_line
from radtrack.compute.variability import log_bounds, log_ratio_spread, log_sd_of
from radtrack.frontend.shares import interference_text


def test_a_ratio_interval_is_the_delta_method_on_its_log_with_a_t_quantile() -> None:
    sd, df = log_ratio_spread((3, 0.04), (2, 0.03), 3)  # 3 solo runs, CV 4 %; 2 co-located, CV 3 %
    assert sd == pytest.approx(math.sqrt(0.04 ** 2 / 3 + 0.03 ** 2)) and df == 3
    lo, hi = log_bounds(2.0, sd, df)
    half = student.ppf(0.975, 3) * sd
    assert (lo, hi) == pytest.approx((2.0 * math.exp(-half), 2.0 * math.exp(half)))
    assert log_sd_of(lo, hi, df) == pytest.approx(sd)  # what the workload figures recover
    # one side repeated: its CV stands for both; neither: no interval
    assert log_ratio_spread((1, math.nan), (4, 0.05), 1) == pytest.approx((math.sqrt(2) * 0.05, 3))
    assert math.isnan(log_ratio_spread((1, math.nan), (1, math.nan), 1)[0])
    assert all(math.isnan(x) for x in log_bounds(2.0, math.nan, 0))


def test_workload_intervals_propagate_the_rows_and_say_when_there_are_none() -> None:
    df = 4
    t = student.ppf(0.975, df)
    s = np.array([1.6, 2.5])  # the rows' slowdowns, their log sds 5 % and 10 %
    sd = np.array([0.05, 0.10])
    e_sd = np.array([0.08, 0.02])  # their energy per unit ratios' log sds
    change = np.array([10.0, -5.0])
    group = pd.DataFrame({
        "slowdown_lo": s * np.exp(-t * sd), "slowdown_hi": s * np.exp(t * sd), "interval_df": df,
        "energy_per_unit_change_pct_lo": 100 * ((1 + change / 100) * np.exp(-t * e_sd) - 1),
        "energy_per_unit_change_pct_hi": 100 * ((1 + change / 100) * np.exp(t * e_sd) - 1)})
    serial = np.array([300.0, 100.0])
    row: dict[str, object] = {"stp": float((1 / s).sum()), "antt": float(s.mean()),
                              "energy_vs_serial_pct": 6.25}
    _intervals(group, pd.Series(s), serial, row)
    stp_sd = math.sqrt(((sd / s) ** 2).sum())
    assert (row["stp_lo"], row["stp_hi"]) == pytest.approx((row["stp"] - t * stp_sd, row["stp"] + t * stp_sd))
    antt_sd = math.sqrt(((s * sd) ** 2).sum()) / 2
    assert row["antt_hi"] - row["antt"] == pytest.approx(t * antt_sd)
    log_sd = math.sqrt((0.75 * 0.08) ** 2 + (0.25 * 0.02) ** 2)
    assert row["energy_vs_serial_pct_hi"] == pytest.approx(100 * (1.0625 * math.exp(t * log_sd) - 1))
    assert row["interval_note"] == ""
    line, note = figures_line(row)
    assert f"stp {row['stp']:.2f} [{row['stp_lo']:.2f}, {row['stp_hi']:.2f}]" in line and "from repeats" in note

    bare: dict[str, object] = {"stp": 1.0, "antt": 2.0, "energy_vs_serial_pct": 3.0}
    _intervals(group.assign(interval_df=np.nan), pd.Series(s), serial, bare)
    assert "stp_lo" not in bare and "no repeats" in str(bare["interval_note"])
    assert "Workload numbers" in str(bare["interval_note"])
    assert figures_line(bare) == ("stp 1.00, antt 2.00, energy_vs_serial_pct +3.0",
                                  "no 95 % intervals: no repeats; how to repeat: docs/sheets.md, Repeats")
    assert "energy_vs_serial_pct n/a" in figures_line({"stp": 1.0, "antt": 2.0})[0]


def test_the_page_shows_the_stored_figures_with_their_intervals() -> None:
    stored = {"summary/workload/stp": 1.04, "summary/workload/stp_lo": 0.98, "summary/workload/stp_hi": 1.09,
              "summary/workload/antt": 1.93, "summary/workload/antt_lo": 1.82, "summary/workload/antt_hi": 2.03,
              "summary/workload/energy_vs_serial_pct": -2.8}
    # the report's column names, as the launcher's closing line says them (figures_said)
    assert interference_text(stored) == ("stp 1.04 [0.98, 1.09], antt 1.93 [1.82, 2.03], energy_vs_serial_pct "
                                         "-2.8 ([95 % intervals] from repeats)")
    assert interference_text({"summary/workload/stp": 1.0, "summary/workload/antt": 2.0}).endswith(
        "energy_vs_serial_pct - (no 95 % intervals: no repeats of these rows)")
    assert interference_text({}) == ""


def test_the_printed_report_says_which_rows_have_no_interval_and_how_to_get_one() -> None:
    from radtrack.analysis.report_text import ExperimentReport, render_report
    from radtrack.compute.interference import NO_REPEATS

    inter = pd.DataFrame({"run_id": ["r1", "r2"], "run_name": ["e-4 A", "e-4 B"], "workload": [4, 4],
                          "slowdown": [1.6, 3.2], "solo_runs": ["e-1 A (r0)", "e-3 A (r3)"],
                          "interval_note": [NO_REPEATS, NO_REPEATS], "note": ["", ""]})
    workloads = pd.DataFrame({"workload": [4], "rows": [2], "stp": [0.9], "antt": [2.4],
                              "interval_note": [NO_REPEATS], "note": [""]})
    text = render_report(ExperimentReport("e", pd.DataFrame({"run_id": ["r1", "r2"], "run_name": ["e-4 A", "e-4 B"]}),
                                          inter, pd.DataFrame(), workloads))
    flat = " ".join(text.split())
    assert "Intervals (e-4 A, e-4 B): no repeats of the solo or the co-located configuration" in flat, text
    assert "Intervals (4): no repeats" in flat and "docs/sheets.md, Repeats" in flat
