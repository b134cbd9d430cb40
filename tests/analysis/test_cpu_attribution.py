"""Co-location accounting of the host's CPU side (radtrack/compute/attribution.py with
``GpuUse.host``; the rule in radtrack/compute/cpu_energy_share.py): co-located runs share a
CPU package or DRAM device by CPU time, and the parts add up to the device's energy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from radtrack.compute.attribution import HOST_METHOD, IDLE, OTHER, GpuUse, account
from radtrack.compute.cpu_energy_share import (
    HOST_CPU,
    PROC_CPU,
    cpu_readings,
    host_busy_seconds,
    mark_host_uses,
)

T = np.arange(0.0, 10.01, 0.5)  # readings every 0.5 s for 10 s
WATTS = 80.0


def _use(run: str, cpu: float | None, host: float | None, start: float = 0.0, end: float = 10.0,
         mode: str = "plain") -> GpuUse:
    readings = {"energy_j": (T, WATTS * T)}
    if cpu is not None:
        readings[PROC_CPU] = (T, np.full(len(T), cpu))
    if host is not None:
        readings[HOST_CPU] = (T, np.full(len(T), host))
    return GpuUse(run, "box:pkg0", mode, start, end, readings, host=True)


def _totals(acc) -> dict[str, float]:
    return {p: acc.energy_j(p) for p in acc.energy.columns}


def test_runs_share_the_package_by_cpu_time_and_the_rest_is_other():
    # A 300 % of one core, B 100 %, the host 500 % busy: 3/5, 1/5 and other 1/5 of 800 J
    acc = account([_use("A", 300, 500), _use("B", 100, 500)], 0.0, 10.0)["box:pkg0"]
    got = _totals(acc)
    assert acc.method == HOST_METHOD and acc.host
    assert got["A"] == pytest.approx(480) and got["B"] == pytest.approx(160)
    assert got[OTHER] == pytest.approx(160) and got[IDLE] == pytest.approx(0)
    assert acc.gpu_energy_j == pytest.approx(WATTS * 10)  # nothing lost, nothing twice
    assert acc.share["A"].mean() == pytest.approx(300)  # % of one core


def test_a_run_counts_only_inside_its_span_and_no_cpu_time_is_idle():
    # B's tree existed for the first 5 s; nothing at all was busy in the last 5 s
    a = _use("A", 0, None)
    b = _use("B", 200, None, end=5.0)
    acc = account([a, b], 0.0, 10.0)["box:pkg0"]
    got = _totals(acc)
    assert got["A"] == pytest.approx(0) and got["B"] == pytest.approx(400)
    assert got[IDLE] == pytest.approx(400) and got[OTHER] == pytest.approx(0)
    assert acc.notes  # no host busy time: said so


def test_placement_mode_does_not_change_the_host_split():
    # rows placed as MPS clients on a GPU still share the host by CPU time
    plain = account([_use("A", 100, 200), _use("B", 50, 200)], 0.0, 10.0)["box:pkg0"]
    mps = account([_use("A", 100, 200, mode="mps"), _use("B", 50, 200, mode="mps")], 0.0, 10.0)["box:pkg0"]
    assert _totals(plain) == pytest.approx(_totals(mps))


def test_without_every_runs_cpu_time_the_device_goes_by_holding_time():
    acc = account([_use("A", 100, 200), _use("B", None, 200, end=5.0)], 0.0, 10.0)["box:pkg0"]
    got = _totals(acc)
    assert acc.method == "held-time" and "no process CPU time" in acc.notes["B"]
    assert got["A"] == pytest.approx(600) and got["B"] == pytest.approx(200)
    assert sum(got.values()) == pytest.approx(WATTS * 10)


def test_a_run_alone_keeps_the_whole_host():
    acc = account([_use("A", 10, 400)], 0.0, 10.0)["box:pkg0"]
    assert acc.method == "solo" and acc.energy_j("A") == pytest.approx(WATTS * 10)


def test_cpu_readings_come_by_role_and_host_busy_counts_the_cores():
    t = np.array([1.0, 2.0, 3.0])
    top = pd.DataFrame({"time": t, "top/cpu_pct": [50.0, 50.0, 25.0], "top/cpu0/util_pct": [60.0, 40.0, 0.0],
                        "top/cpu1/util_pct": [40.0, 60.0, 50.0], "top/proc/cpu_pct": [90.0, 80.0, 45.0]})
    got = cpu_readings({"top": top})
    np.testing.assert_allclose(got[PROC_CPU][1], [90, 80, 45])
    np.testing.assert_allclose(got[HOST_CPU][1], [100, 100, 50])  # all cores' % x 2 cores
    # without the all-cores figure, the cores' sum
    got = cpu_readings({"top": top.drop(columns="top/cpu_pct")})
    np.testing.assert_allclose(got[HOST_CPU][1], [100, 100, 50])
    # without per-core readings the host's busy time is unknown: left out, never guessed
    got = cpu_readings({"top": top[["time", "top/cpu_pct", "top/proc/cpu_pct"]]})
    assert HOST_CPU not in got and PROC_CPU in got


def test_only_the_hosts_devices_are_marked():
    t = np.array([1.0, 2.0])
    frames = {"rapl": pd.DataFrame({"time": t, "rapl/pkg0/energy_j": [0.0, 5.0]}),
              "smi": pd.DataFrame({"time": t, "smi/gpu0/power_w": [100.0, 100.0]}),
              "top": pd.DataFrame({"time": t, "top/proc/cpu_pct": [50.0, 50.0]})}
    uses = {s: GpuUse("A", f"x:{s}", "plain", 0.0, 2.0, {}) for s in ("pkg0", "gpu0")}
    mark_host_uses(uses, frames)
    assert uses["pkg0"].host and PROC_CPU in uses["pkg0"].readings
    assert not uses["gpu0"].host and not uses["gpu0"].readings


def test_a_change_of_load_inside_a_window_is_split_at_the_energy_readings():
    # every 0.1 s for 2 s: the host is 200 % busy (B burns it) until 1.5 s, then 20 %; A
    # uses 10 % throughout. Over 1-s windows' totals A would get 0.1/1.3 of the second
    # window; at the counter's own readings it gets 1/2 of each piece after 1.5 s
    t = np.round(np.arange(0.0, 2.001, 0.1), 3)
    host = np.where(t < 1.5, 200.0, 20.0)
    a = GpuUse("A", "box:pkg0", "plain", 0.0, 2.0, {"energy_j": (t, WATTS * t),
               PROC_CPU: (t, np.full(len(t), 10.0)), HOST_CPU: (t, host)}, host=True)
    b = GpuUse("B", "box:pkg0", "plain", 0.0, 2.0, {"energy_j": (t, WATTS * t),
               PROC_CPU: (t, np.where(t < 1.5, 190.0, 0.0)), HOST_CPU: (t, host)}, host=True)
    got = _totals(account([a, b], 0.0, 2.0)["box:pkg0"])
    # the rule over every 0.1-s piece, by hand (trapezoids of both series)
    e = np.diff(WATTS * t)
    ua = np.full(len(e), 0.01)
    busy = (host[1:] + host[:-1]) / 2 / 100 * 0.1
    assert got["A"] == pytest.approx(float(np.sum(e * ua / busy)), rel=1e-6)
    assert sum(got.values()) == pytest.approx(WATTS * 2.0)


def test_the_hosts_busy_time_is_the_reading_that_covers_a_window_not_the_larger():
    # two listeners read the same host: both cover the window, so their mean (the larger
    # of two noisy readings is biased upward); only one covers the next: that one alone
    edges = np.array([0.0, 1.0, 2.0])
    one = (np.array([0.0, 1.0, 2.0]), np.array([100.0, 100.0, 100.0]))
    two = (np.array([0.0, 1.0, 1.2]), np.array([140.0, 140.0, 900.0]))
    got = host_busy_seconds([one, two], edges)
    assert got == pytest.approx([1.2, 1.0])
