"""Server-side downsampling: point budget, extremes kept, windows, smoothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radtrack.frontend.downsample import MIN_BUDGET, downsample, rolling_mean, visible_window


def _noisy(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.arange(n, dtype=np.float64) * 0.1, rng.normal(100.0, 5.0, n)


@pytest.mark.parametrize("budget", [MIN_BUDGET, 50, 1500])
def test_budget_is_respected(budget: int) -> None:
    x, y = _noisy(36_000)
    dx, dy = downsample(x, y, budget)
    assert len(dx) == len(dy)
    assert 3 <= len(dx) <= budget  # extremes may coincide with points LTTB picked


def test_isolated_spike_and_dip_survive_any_budget() -> None:
    x, y = _noisy(36_000, seed=3)
    y[12_345] = 1_000.0  # a one-sample power spike
    y[30_001] = -50.0
    for budget in (MIN_BUDGET, 10, 100, 1000):
        dx, dy = downsample(x, y, budget)
        assert dy.max() == 1_000.0 and dx[dy.argmax()] == x[12_345]
        assert dy.min() == -50.0 and dx[dy.argmin()] == x[30_001]


def test_output_is_a_sorted_subset_with_the_endpoints() -> None:
    x, y = _noisy(5_000)
    dx, dy = downsample(x, y, 300)
    assert np.all(np.diff(dx) > 0)
    assert dx[0] == x[0] and dx[-1] == x[-1]
    lookup = dict(zip(x, y, strict=True))
    assert all(lookup[a] == b for a, b in zip(dx, dy, strict=True))


def test_short_series_is_returned_whole_and_nan_is_dropped() -> None:
    x = np.arange(6, dtype=np.float64)
    y = np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0])
    dx, dy = downsample(x, y, 100)
    assert dx.tolist() == [0.0, 2.0, 3.0, 5.0]
    assert dy.tolist() == [1.0, 3.0, 4.0, 6.0]


def test_bad_arguments_name_the_problem() -> None:
    with pytest.raises(ValueError, match="at least 5 points"):
        downsample(np.arange(10.0), np.arange(10.0), 4)
    with pytest.raises(ValueError, match="x has 3 points but y has 2"):
        downsample(np.arange(3.0), np.arange(2.0), 10)


def test_visible_window_includes_one_neighbour_each_side() -> None:
    x = np.arange(100, dtype=np.float64)
    window = visible_window(x, 10.5, 20.5)
    assert x[window][0] == 10.0 and x[window][-1] == 21.0
    assert visible_window(x, None, None) == slice(0, 100)
    assert len(x[visible_window(x, 200.0, 300.0)]) == 1  # the last sample, left of the view
    assert len(x[visible_window(x, -10.0, -5.0)]) == 1


def test_rolling_mean_matches_pandas_trailing_mean() -> None:
    _, y = _noisy(1_000)
    expected = pd.Series(y).rolling(25, min_periods=1).mean().to_numpy()
    np.testing.assert_allclose(rolling_mean(y, 25), expected, rtol=1e-9)
    assert rolling_mean(y, 1) is y
    with pytest.raises(ValueError, match="at least 1 sample"):
        rolling_mean(y, 0)
