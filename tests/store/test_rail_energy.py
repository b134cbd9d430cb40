"""Each power rail's energy over the run (issue 40): the rule (radtrack/vocab/energy_sources.py
``rail_sources``, its joules radtrack/compute/energy_sums.py ``rail_energies``), its key and what it is (radtrack/vocab/schema.py ``rail_energy_key``,
radtrack/vocab/meaning.py), and the sink storing it at a run's end, live and through
``radtrack sync``'s recovery of a spool, over the run's span. The CLI runs on recorded
Jetson and RAPL output: tests/listeners/test_energy_sources_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import made_store

from radtrack.compute import energy_sums
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema
from radtrack.vocab.meaning import describe, rail_name

T = np.arange(11, dtype=float)  # readings every second for 10 s


def test_a_rails_name_is_its_key_without_the_unit() -> None:
    assert rail_name("tegrastats/power/vdd_gpu_soc_mw") == "tegrastats/power/vdd_gpu_soc"
    assert rail_name("rapl/pkg0/core/energy_j") == rail_name("rapl/pkg0/core/power_w") == "rapl/pkg0/core"
    assert rail_name("rapl/psys/energy_j") == "rapl/psys"
    assert rail_name("meter/rail0") == "meter/rail0"  # no unit suffix: the key itself
    assert schema.rail_energy_key("rapl/pkg0/core") == "summary/rapl/pkg0/core/energy_j"


def test_each_rail_is_integrated_by_the_devices_rule_and_never_a_devices_total() -> None:
    readings = {
        # a Jetson: the board's total (rails_sum) and two rails; a running average of one
        "tegrastats/power/rails_sum_mw": (T, np.full(11, 9000.0)),
        "tegrastats/power/gpu_mw": (T, 1000.0 + 1000.0 * T),  # 1 W .. 11 W: 60 J
        "tegrastats/power/cpu_mw": (T, np.full(11, 2500.0)),  # 25 J
        "tegrastats/power/cpu_avg_mw": (T, np.full(11, 7777.0)),  # mean since start: never
        # RAPL's core: its counter (10 J/s) before its interval-average power
        "rapl/pkg0/core/energy_j": (T, 10.0 * T),
        "rapl/pkg0/core/power_w": (T, np.full(11, 50.0)),
        # uncore read as power only: integrated
        "rapl/pkg0/uncore/power_w": (T, np.full(11, 4.0)),
        "rapl/pkg0/energy_j": (T, 60.0 * T),
        "rapl/psys/energy_j": (T[:1], np.array([5.0])),  # one reading: unknown, not 0
    }
    chosen = es.rail_sources(readings)
    assert {r: s.key for r, s in chosen.items()} == {
        "tegrastats/power/gpu": "tegrastats/power/gpu_mw",
        "tegrastats/power/cpu": "tegrastats/power/cpu_mw",
        "rapl/pkg0/core": "rapl/pkg0/core/energy_j",
        "rapl/pkg0/uncore": "rapl/pkg0/uncore/power_w",
        "rapl/psys": "rapl/psys/energy_j",
    }
    got = energy_sums.rail_energies(readings)
    assert got["tegrastats/power/gpu"] == pytest.approx(60.0)  # trapezoid: linear, exact
    assert got["tegrastats/power/cpu"] == pytest.approx(25.0)
    assert got["rapl/pkg0/core"] == pytest.approx(100.0)  # last - first, not 50 W x 10 s
    assert got["rapl/pkg0/uncore"] == pytest.approx(40.0)
    assert np.isnan(got["rapl/psys"])
    # the devices' totals stay their own: a rail is never a device's source
    totals = energy_sums.device_energies(readings)
    assert totals == {"power": pytest.approx(90.0), "pkg0": pytest.approx(600.0)}


def test_a_rails_energy_key_says_what_it_is_and_counts_nowhere() -> None:
    m = describe("summary/tegrastats/power/vdd_gpu_soc/energy_j")
    assert (m.label, m.scope, m.unit, m.role, m.stat) == (
        "rail vdd_gpu_soc energy over the run (J)", "device", "J", "energy", "total")
    m = describe("summary/rapl/pkg0/core/energy_j")
    assert (m.label, m.scope, m.role) == ("CPU pkg0 core energy over the run (J)", "host", "energy")
    assert describe("summary/rapl/pkg0/dram/energy_j").label == "DRAM pkg0 energy over the run (J)"
    # readers that find a device's total among summaries (run_summaries, energy_columns) by
    # role never take a rail's for one
    for key in ("summary/tegrastats/power/vdd_gpu_soc/energy_j", "summary/rapl/pkg0/core/energy_j"):
        found = es.source(key.removeprefix(schema.SUMMARY_PREFIX))
        assert found is None or found.kind == "rail", key
    assert describe("window/busy/cpu_energy_j").scope == "host"


def _feed(sink, t0: float) -> None:
    for i in range(11):
        t = t0 + i
        sink.feed("tegrastats", json.dumps({"type": "sample", "t": t, "v": {
            "tegrastats/power/rails_sum_mw": 9000.0, "tegrastats/power/gpu_mw": 1000.0 + 1000.0 * i,
            "tegrastats/power/gpu_avg_mw": 7777.0}}))
        sink.feed("rapl", json.dumps({"type": "sample", "t": t, "v": {
            "rapl/pkg0/core/energy_j": 10.0 * i, "rapl/pkg0/core/power_w": 50.0}}))


def _metrics(uri: str, run_id: str) -> dict[str, float]:
    from mlflow import MlflowClient

    return MlflowClient(uri).get_run(run_id).data.metrics


def test_the_sink_stores_each_rails_energy_over_the_span_live_and_synced(store: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from radtrack.store.sink import Sink
    from radtrack.store.spool import Span

    c = MlflowClient(made_store(store))
    exp = c.create_experiment("rails")
    t0 = 1_700_000_000.0
    # live: the run's span is 0.5 s .. 9.5 s into the readings (its ends interpolated)
    live = c.create_run(exp).info.run_id
    sink = Sink(c, live, tmp_path / "spool", store)
    _feed(sink, t0)
    sink.spool.span = Span(t0 + 0.5, t0 + 9.5)
    assert sink.close()
    m = _metrics(store, live)
    # 1 + t W from 0.5 s to 9.5 s: 9 + (9.5^2 - 0.5^2) / 2 = 54 J
    assert m["summary/tegrastats/power/gpu/energy_j"] == pytest.approx(54.0, rel=1e-6)
    assert m["summary/rapl/pkg0/core/energy_j"] == pytest.approx(90.0, rel=1e-6)  # the counter's
    assert m["summary/tegrastats/power/gpu_mw/mean"] == pytest.approx(6000.0, rel=1e-6)
    assert "summary/tegrastats/power/gpu_avg/energy_j" not in m
    assert not any(k.startswith("summary/tegrastats/power/rails_sum/") for k in m)

    # a launcher that died before storing: radtrack sync recovers its spool (every reading)
    away = c.create_run(exp).info.run_id
    root = tmp_path / "spool2"
    dead = Sink(c, away, root, store)
    _feed(dead, t0)
    dead.spool.close_files()
    assert Sink.recover(c, root / away).close()
    m = _metrics(store, away)
    assert m["summary/tegrastats/power/gpu/energy_j"] == pytest.approx(60.0, rel=1e-6)
    assert m["summary/rapl/pkg0/core/energy_j"] == pytest.approx(100.0, rel=1e-6)


def test_node_k_of_a_multi_node_run_is_its_own_device_and_never_the_runs_host() -> None:
    """node K's series (``node1/...``) measure node K's devices: never merged with node 0's
    device of the same name, and never the host whose CPU time a run's processes are set
    against (its host is another machine)."""
    keys = ["smi/gpu0/energy_j", "node1/smi/gpu0/energy_j", "top/cpu_pct", "node1/top/cpu_pct",
            "top/proc/cpu_pct", "node1/top/proc/cpu_pct"]
    assert es.device_of("node1/smi/gpu0/energy_j") == "node1/gpu0"
    assert es.device_of("smi/gpu0/energy_j") == "gpu0"
    found = es.energy_sources(keys)
    assert found["gpu0"].key == "smi/gpu0/energy_j" and found["node1/gpu0"].key == "node1/smi/gpu0/energy_j"
    cpu = es.cpu_time_keys(keys)
    assert (cpu.proc, cpu.host) == ("top/proc/cpu_pct", "top/cpu_pct")
