"""benchmarks/overhead_stats.py: Welch's 95 % interval and the comparison against bare."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from overhead_stats import compare, mean_diff_ci, t975, tables  # noqa: E402


def test_t_quantiles():
    assert t975(4) == pytest.approx(2.776)
    assert t975(4.9) == pytest.approx(2.776)  # rounded down: the wider interval
    assert t975(1000) == 1.96


def test_welch_interval_by_hand():
    a, b = [10.0, 12.0, 11.0, 13.0, 9.0], [10.0, 10.5, 9.5, 10.0, 10.0]
    d, lo, hi = mean_diff_ci(a, b)
    # var(a)/5 = 0.5, var(b)/5 = 0.025; df = 0.525^2 / (0.25/4 + 0.000625/4) = 4.39 -> t(4)
    assert d == pytest.approx(1.0)
    half = 2.776 * 0.525**0.5
    assert (lo, hi) == pytest.approx((1.0 - half, 1.0 + half))
    assert lo < 0 < hi  # noisy: the interval includes no difference


def test_needs_two_repeats():
    with pytest.raises(ValueError):
        mean_diff_ci([1.0], [1.0, 2.0])


def _rec(mode: str, step: float, batch: str = "b1") -> dict:
    return {"workload": "heavy", "mode": mode, "ok": True, "step_s": step, "batch": batch,
            "store_bytes": 1e6, "metric_rows": 10, "cpu_listeners_s": 0.5,
            "cpu_launcher_s": 2.0, "cpu_workload_s": 30.0, "wall_s": 20.0}


def test_compare_uses_bare_of_the_same_calls_only():
    recs = [_rec("bare", s) for s in (0.100, 0.101, 0.099)]
    recs += [_rec("bare", 0.5, "other") for _ in range(3)]  # a call without smi@0.1
    recs += [_rec("smi@0.1", s) for s in (0.1010, 0.1012, 0.1008)]
    c = compare(recs, "heavy", "smi@0.1")
    assert c is not None and c["n_bare"] == 3
    assert c["pct"] == pytest.approx(1.0, abs=1e-9)
    md = tables(recs, ["bare", "smi@0.1"], ["heavy"])
    assert "| smi@0.1 | 101.000 | +1.00 % [" in md
