"""top's per-core CPU at its own pace (1 s by default) while the all-cores total follows
the interval: a 128-core host at 0.1 s would otherwise log 1,280 points a second."""

from __future__ import annotations

import time

import pytest

from radtrack.listeners import top as top_module
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.top import CORE_EVERY_ENV, TopListener, core_every_s


def _counts(top: TopListener, n: int, step: float = 0.1) -> tuple[dict[str, int], dict[str, float]]:
    now = [0.0]
    top.clock = lambda: now[0]
    top.probe()
    counts: dict[str, int] = {}
    s: dict[str, float] = {}
    for k in range(1, n + 1):
        time.sleep(0.02)  # real clock ticks for /proc/stat to move a little
        now[0] = k * step
        s = top.sample()
        for key in s:
            counts[key] = counts.get(key, 0) + 1
    return counts, s


@pytest.mark.parametrize("fast", [True, False], ids=["proc", "psutil"])
def test_per_core_once_a_second_totals_every_interval(monkeypatch, fast):
    monkeypatch.delenv(CORE_EVERY_ENV, raising=False)
    top = TopListener(ListenerConfig(interval=0.1))
    top.fast = fast
    counts, _ = _counts(top, 30)  # 0.1 .. 3.0 s on the listener's clock
    assert counts["top/cpu_pct"] == 29  # every interval after the baseline
    # baseline at 0.1 s, then readings at 1.1 s and 2.1 s
    assert all(counts.get(f"top/cpu{i}/util_pct") == 2 for i in range(top.ncpu))
    final = top.final_sample()  # at stop: per-core over the 0.9 s since the last
    assert "top/cpu0/util_pct" in final


def test_per_core_pace_from_the_environment(monkeypatch):
    monkeypatch.setenv(CORE_EVERY_ENV, "0")
    top = TopListener(ListenerConfig(interval=0.1))
    counts, _ = _counts(top, 10)
    assert counts["top/cpu0/util_pct"] == counts["top/cpu_pct"] == 9
    specs = {s.key: s for s in top.probe()}
    assert "every 0.1 s" in specs["top/cpu0/util_pct"].description


def test_interval_longer_than_the_core_pace(monkeypatch):
    monkeypatch.delenv(CORE_EVERY_ENV, raising=False)
    top = TopListener(ListenerConfig(interval=2.0))
    counts, _ = _counts(top, 4, step=2.0)
    assert counts["top/cpu0/util_pct"] == counts["top/cpu_pct"] == 3


@pytest.mark.parametrize("raw", ["-1", "fast", "nan"])
def test_bad_core_pace_is_a_clear_error(raw):
    with pytest.raises(ValueError, match=CORE_EVERY_ENV):
        core_every_s({CORE_EVERY_ENV: raw})


def test_default_core_pace():
    assert core_every_s({}) == top_module.CORE_EVERY_S == 1.0
    assert core_every_s({CORE_EVERY_ENV: "5"}) == 5.0
