"""rapl: zones found in recorded powercap trees (tests/data/rapl), what each series is,
wrap-around and resets, the listener through ``python -m radtrack.listeners`` on a tree
whose counters advance and wrap, and ``radtrack listeners`` saying why it cannot run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rapl_fake import DATA, AdvancingTree
from support import radtrack_cli

from radtrack.listeners.rapl import RaplListener, Zone, energy_every_s, increment, zones
from radtrack.vocab import energy_sources as es
from radtrack.vocab.meaning import describe


def _prefixes(tree: str) -> list[str]:
    return [z.prefix for z in zones(DATA / tree)]


def test_zones_of_each_recorded_tree():
    # the MMIO duplicate of package 0 and the control-type folder are not zones
    assert _prefixes("server_2socket") == ["rapl/pkg0", "rapl/pkg0/dram", "rapl/pkg1", "rapl/pkg1/dram"]
    assert _prefixes("client_psys") == ["rapl/pkg0", "rapl/pkg0/core", "rapl/pkg0/dram",
                                        "rapl/pkg0/uncore", "rapl/psys"]
    assert _prefixes("amd_zen") == ["rapl/pkg0"]
    assert zones(DATA / "nowhere") == []


def test_package_and_dram_count_toward_the_run_parts_and_platform_never():
    keys = [f"{p}/{q}" for p in _prefixes("client_psys") for q in ("energy_j", "power_w")]
    chosen = es.energy_sources(keys)
    assert {d: s.key for d, s in chosen.items()} == {
        "pkg0": "rapl/pkg0/energy_j", "pkg0/dram": "rapl/pkg0/dram/energy_j"}
    assert all(s.scope == "host" and s.kind == "counter" for s in chosen.values())
    for key in ("rapl/pkg0/core/energy_j", "rapl/pkg0/uncore/power_w", "rapl/psys/energy_j"):
        assert describe(key).role == "power_rail", key
    m = describe("rapl/pkg1/power_w")
    assert (m.role, m.scope, m.unit, m.flavour) == ("device_power", "host", "W", "average")
    assert describe("rapl/pkg0/dram/energy_j").label == "DRAM pkg0 energy counter (J)"
    assert describe("summary/rapl/pkg0/energy_j").role == "energy"


def _zone(last: int, max_uj: int | None = 1_000_000_000) -> Zone:
    return Zone(Path("."), "rapl/pkg0", max_uj, last_uj=last)


def test_wrap_adds_the_range_and_an_impossible_wrap_is_a_reset():
    z = _zone(999_000_000)
    assert increment(z, 4_000_000, 1.0) == 5_000_000 and z.wraps == 1  # 5 J over the wrap
    z = _zone(500_000_000)  # a wrap would mean 500 J in 10 ms: the counter restarted
    assert increment(z, 3_000_000, 0.01) == 3_000_000 and z.resets == 1
    z = _zone(10_000_000, None)  # no range known: a drop can only be a reset
    assert increment(z, 2_000_000, 1.0) == 2_000_000 and z.resets == 1
    assert increment(_zone(5), 9, 1.0) == 4


def test_pace_from_the_environment():
    assert energy_every_s({}) == 1.0 and energy_every_s({"RADTRACK_RAPL_EVERY_S": "0"}) == 0
    with pytest.raises(ValueError, match="RADTRACK_RAPL_EVERY_S='x'"):
        energy_every_s({"RADTRACK_RAPL_EVERY_S": "x"})


def _env(root: Path, **more: str) -> dict[str, str]:
    return {**os.environ, "RADTRACK_POWERCAP_ROOT": str(root), "MLFLOW_DISABLE_TELEMETRY": "true",
            **more}


def test_runner_counts_across_a_wrap_exactly(tmp_path):
    """The test advances the tree between the listener's readings; package 1 (5 J below
    its range) wraps after the first reading: every stored energy is a true increment of
    the tree between two of its writes, the last one the whole run's."""
    watts = {"intel-rapl:0": 60.0, "intel-rapl:0:0": 8.0, "intel-rapl:1": 75.0, "intel-rapl:1:0": 9.0}
    tree = AdvancingTree.copy("server_2socket", tmp_path, watts)
    max1 = tree.max_uj["intel-rapl:1"]
    (tree.root / "intel-rapl:1" / "energy_uj").write_text(f"{max1 - 5_000_000}\n")
    tree.raw["intel-rapl:1"] = max1 - 5_000_000
    env = _env(tree.root, RADTRACK_RAPL_EVERY_S="0", RADTRACK_LISTENER_FLUSH_S="0")
    proc = subprocess.Popen([sys.executable, "-m", "radtrack.listeners", "rapl", "--count", "8",
                             "--interval", "0.1"], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:  # three steps after each reading: 1.5 J each on package 1
        lines.append(json.loads(line))
        if lines[-1]["type"] == "sample":
            for _ in range(3):
                tree.step()
    assert proc.wait(timeout=60) == 0
    hello, *samples = lines
    assert {m["key"] for m in hello["metrics"]} == {
        f"rapl/{p}/{q}" for p in ("pkg0", "pkg0/dram", "pkg1", "pkg1/dram") for q in ("energy_j", "power_w")}
    assert hello["tags"]["radtrack.listener.rapl.zones"].startswith("pkg0=intel-rapl:0, ")
    assert 1 < tree.wrap_at["intel-rapl:1"] < tree.steps and "intel-rapl:0" not in tree.wrap_at
    for zone, prefix in (("intel-rapl:1", "pkg1"), ("intel-rapl:0", "pkg0"), ("intel-rapl:1:0", "pkg1/dram")):
        energy = [s["v"][f"rapl/{prefix}/energy_j"] for s in samples if f"rapl/{prefix}/energy_j" in s["v"]]
        assert energy[0] == 0 and energy == sorted(energy) and len(energy) >= 8
        true = tree.increments(zone)
        assert all(round(e * 1e6) in true for e in energy), (zone, energy)
        assert energy[-1] > 0.5 * watts[zone] * tree.step_s * tree.steps  # crossed the wrap too
        power = [s["v"][f"rapl/{prefix}/power_w"] for s in samples if f"rapl/{prefix}/power_w" in s["v"]]
        assert power and min(power) >= 0 and max(power) < 1e4  # a wrap never reads as a spike


def test_unavailable_without_zones_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("RADTRACK_POWERCAP_ROOT", str(tmp_path))
    why = RaplListener.available()
    assert not why and "no RAPL zones under" in why.reason and "RADTRACK_POWERCAP_ROOT" in why.reason


def test_unavailable_when_energy_is_root_only(tmp_path, monkeypatch):
    import radtrack.listeners.rapl as rapl

    tree = AdvancingTree.copy("amd_zen", tmp_path, {})
    monkeypatch.setenv("RADTRACK_POWERCAP_ROOT", str(tree.root))
    assert RaplListener.available()

    def denied(zone):  # what a user meets on Linux >= 5.10 (root reads any mode: no chmod here)
        raise PermissionError(13, "Permission denied", str(zone.folder / "energy_uj"))

    monkeypatch.setattr(rapl.Zone, "read", denied)
    why = RaplListener.available()
    assert not why and "intel-rapl:0/energy_uj is readable by root only (Linux >= 5.10" in why.reason


def test_radtrack_listeners_says_why_on_a_host_without_powercap(tmp_path):
    p = radtrack_cli("listeners", env={"RADTRACK_POWERCAP_ROOT": str(tmp_path / "powercap")})
    line = next(x for x in p.stdout.splitlines() if x.startswith("rapl"))
    assert "unavailable" in line and "no RAPL zones under" in line and "powercap driver" in line


def test_radtrack_listeners_lists_it_available_on_a_readable_tree():
    p = radtrack_cli("listeners", env={"RADTRACK_POWERCAP_ROOT": str(DATA / "client_psys")})
    line = next(x for x in p.stdout.splitlines() if x.startswith("rapl"))
    assert "available" in line and "unavailable" not in line


def test_rapl_does_not_hold_the_scripts_start():
    # a RAPL host would otherwise start every run 0.5-1 s late (docs/listeners.md)
    assert RaplListener.holds_start is False
