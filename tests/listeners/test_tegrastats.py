"""tegrastats: the line parser on each Jetson generation's format, and the listener
reading a stand-in tegrastats through the JSON-lines runner."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from radtrack.listeners import runner
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.tegrastats import TegrastatsListener, parse_line

DATA = Path(__file__).parents[1] / "data" / "tegrastats"


def _first(name: str) -> dict[str, float]:
    return parse_line((DATA / name).read_text().splitlines()[0])


def test_tx1_l4t24_shared_cpu_clock_and_old_names():
    v = _first("tx1_l4t24.txt")
    assert v["tegrastats/mem/ram_used_mb"] == 1391 and v["tegrastats/mem/ram_total_mb"] == 3995
    assert v["tegrastats/cpu0/util_pct"] == 15 and v["tegrastats/cpu0/freq_mhz"] == 1734
    assert "tegrastats/cpu2/util_pct" not in v and v["tegrastats/cpu/online_count"] == 2
    assert v["tegrastats/emc/util_pct"] == 10 and v["tegrastats/emc/freq_mhz"] == 1600
    assert v["tegrastats/gpu/util_pct"] == 3 and v["tegrastats/gpu/freq_mhz"] == 76
    assert not any(k.startswith("tegrastats/power/") for k in v)


def test_tx1_l4t28_rails_without_unit():
    lines = (DATA / "tx1_l4t28.txt").read_text().splitlines()
    v = parse_line(lines[1])
    assert v["tegrastats/power/pom_5v_in_mw"] == 5112 and v["tegrastats/power/pom_5v_in_avg_mw"] == 3574
    assert v["tegrastats/power/pom_5v_gpu_mw"] == 1621
    assert v["tegrastats/gpu/util_pct"] == 46 and v["tegrastats/gpu/freq_mhz"] == 998
    assert v["tegrastats/cpu3/util_pct"] == 8 and v["tegrastats/cpu3/freq_mhz"] == 1734
    assert v["tegrastats/temp/ao_c"] == 45.5 and v["tegrastats/temp/thermal_c"] == 39.75
    assert v["tegrastats/mem/swap_total_mb"] == 0


def test_tx2_off_cores_keep_their_index():
    v = _first("tx2.txt")
    assert v["tegrastats/cpu0/util_pct"] == 2
    assert "tegrastats/cpu1/util_pct" not in v and "tegrastats/cpu2/freq_mhz" not in v
    assert v["tegrastats/cpu3/util_pct"] == 1 and v["tegrastats/cpu/online_count"] == 4
    assert v["tegrastats/power/vdd_in_mw"] == 2371 and v["tegrastats/power/vdd_sys_ddr_avg_mw"] == 229
    assert v["tegrastats/temp/tdiode_c"] == 37.25


def test_nano_iram_is_not_a_rail():
    v = _first("nano.txt")
    assert v["tegrastats/power/pom_5v_in_mw"] == 1107
    assert not any("iram" in k for k in v)


def test_xavier_bare_rail_names_beside_temperatures():
    v = _first("xavier_l4t32.txt")
    assert v["tegrastats/power/gpu_mw"] == 0 and v["tegrastats/power/cpu_mw"] == 311
    assert v["tegrastats/power/soc_avg_mw"] == 1244 and v["tegrastats/power/sys5v_mw"] == 1412
    assert v["tegrastats/temp/gpu_c"] == 30.5 and v["tegrastats/temp/cpu_c"] == 31
    assert v["tegrastats/gpu/freq_mhz"] == 1377


def test_xavier_nx_vdd_in():
    v = _first("xavier_nx_l4t32_5.txt")
    assert v["tegrastats/power/vdd_in_mw"] == 4126 and v["tegrastats/power/vdd_cpu_gpu_cv_mw"] == 612


def test_orin_agx_mw_rails_gpc_clocks_and_sensors_off():
    lines = (DATA / "orin_agx_r35.txt").read_text().splitlines()
    idle, busy = parse_line(lines[0]), parse_line(lines[1])
    assert idle["tegrastats/gpu/freq_mhz"] == 0
    assert busy["tegrastats/gpu/util_pct"] == 97 and busy["tegrastats/gpu/freq_mhz"] == 1300
    assert busy["tegrastats/power/vdd_gpu_soc_mw"] == 14120
    assert busy["tegrastats/power/vdd_gpu_soc_avg_mw"] == 8456
    assert not any("/nc_" in k for k in busy)  # unconnected channels
    # -256C: a powered-down sensor, not a temperature
    assert "tegrastats/temp/gpu_c" not in idle and "tegrastats/temp/cv0_c" not in idle
    assert busy["tegrastats/temp/gpu_c"] == 47.2 and busy["tegrastats/temp/tj_c"] == 47.2
    assert busy["tegrastats/cpu7/freq_mhz"] == 2201 and busy["tegrastats/emc/freq_mhz"] == 3199
    assert "tegrastats/cpu8/util_pct" not in busy and busy["tegrastats/cpu/online_count"] == 8


def test_orin_nano_lowercase_sensors_and_bare_gr3d():
    v = _first("orin_nano_r36.txt")
    assert v["tegrastats/temp/tj_c"] == 46.5 and v["tegrastats/temp/soc0_c"] == 45.562
    assert v["tegrastats/gpu/util_pct"] == 0 and "tegrastats/gpu/freq_mhz" not in v
    assert v["tegrastats/power/vdd_in_mw"] == 4867 and v["tegrastats/power/vdd_soc_avg_mw"] == 1389


def test_every_recorded_key_is_a_valid_metric_name():
    from radtrack.listeners.base import check_key

    for f in DATA.glob("*.txt"):
        for line in f.read_text().splitlines():
            values = parse_line(line)
            assert values, f"{f.name}: nothing parsed"
            for key in values:
                check_key(key)


def test_lines_without_stats_give_nothing():
    assert parse_line("") == {}
    assert parse_line("tegrastats: permission denied") == {}


# -- the listener, on a stand-in tegrastats that replays the Orin recording ---------------

FAKE = """\
#!{python}
import sys, time
assert sys.argv[1] == "--interval", sys.argv
delay = int(sys.argv[2]) / 1000
lines = open({rec!r}).read().splitlines()
i = 0
while True:
    print(lines[i % len(lines)], flush=True)
    i += 1
    time.sleep(delay)
"""


@pytest.fixture
def fake_tegrastats(tmp_path, monkeypatch):
    exe = tmp_path / "tegrastats"
    exe.write_text(FAKE.format(python=sys.executable, rec=str(DATA / "orin_agx_r35.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")


def test_unavailable_without_tegrastats(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    why = TegrastatsListener.available()
    assert not why and "no tegrastats on PATH" in why.reason


def test_runner_reads_tegrastats(fake_tegrastats):
    assert TegrastatsListener.available()
    out = io.StringIO()
    assert runner.run("tegrastats", ListenerConfig(interval=0.05), out=out, count=4) == 0
    hello, *samples = (json.loads(x) for x in out.getvalue().splitlines())
    units = {m["key"]: m["unit"] for m in hello["metrics"]}
    assert units["tegrastats/power/vdd_gpu_soc_mw"] == "mW"
    assert units["tegrastats/temp/tj_c"] == "°C" and units["tegrastats/mem/ram_used_mb"] == "MB"
    assert len(samples) == 4
    assert {s["v"]["tegrastats/power/vdd_gpu_soc_mw"] for s in samples} <= {2792, 14120}
    # the probe saw the idle line, so the GPU sensor that was off then is not a metric
    assert all("tegrastats/temp/gpu_c" not in s["v"] for s in samples)


# -- what each rail is: the board's total, or a part of it --------------------------------

BOARD_TOTAL = {  # recording -> the key readers integrate for the board's energy
    "nano.txt": "tegrastats/power/pom_5v_in_mw",
    "tx1_l4t28.txt": "tegrastats/power/pom_5v_in_mw",
    "tx2.txt": "tegrastats/power/vdd_in_mw",
    "xavier_nx_l4t32_5.txt": "tegrastats/power/vdd_in_mw",
    "orin_nano_r36.txt": "tegrastats/power/vdd_in_mw",
    "xavier_l4t32.txt": "tegrastats/power/rails_sum_mw",  # no input rail: the rails side by side
    "orin_agx_r35.txt": "tegrastats/power/rails_sum_mw",
}


@pytest.mark.parametrize("name", sorted(BOARD_TOTAL))
def test_each_format_declares_one_board_total_and_its_rails_as_parts(name):
    from radtrack.vocab import energy_sources as es
    from radtrack.vocab.meaning import describe

    for line in (DATA / name).read_text().splitlines():
        v = parse_line(line)
        chosen = es.energy_sources(v)
        assert [s.key for s in chosen.values()] == [BOARD_TOTAL[name]], chosen
        power = [k for k in v if k.startswith("tegrastats/power/")]
        totals = [k for k in power if describe(k).role == "device_power"]
        parts = [k for k in power if describe(k).role == "power_rail"]
        assert set(totals) | set(parts) == set(power)
        # the mean since tegrastats started is shown, never integrated
        assert all(describe(k).flavour == "running_average" for k in power if k.endswith("_avg_mw"))
        assert all(describe(k).flavour == "" for k in power if not k.endswith("_avg_mw"))
        assert BOARD_TOTAL[name] in totals and all(describe(k).scope == "device" for k in power)
        if BOARD_TOTAL[name].endswith("rails_sum_mw"):
            rails = [k for k in parts if not k.endswith("_avg_mw")]
            assert v[BOARD_TOTAL[name]] == sum(v[k] for k in rails)


def test_xavier_sum_is_its_six_rails_and_orin_agx_skips_unconnected_channels():
    xavier = _first("xavier_l4t32.txt")
    assert xavier["tegrastats/power/rails_sum_mw"] == 0 + 311 + 1244 + 0 + 155 + 1412
    busy = parse_line((DATA / "orin_agx_r35.txt").read_text().splitlines()[1])
    assert busy["tegrastats/power/rails_sum_mw"] == 14120 + 2380 + 4817 + 905
    # a board with an input rail gets no sum: its rails are parts of the input
    assert "tegrastats/power/rails_sum_mw" not in _first("orin_nano_r36.txt")


def test_board_power_tag_says_how_the_total_is_read():
    from radtrack.listeners.tegrastats import board_power

    assert board_power(set(_first("orin_nano_r36.txt"))).startswith("VDD_IN")
    assert board_power(set(_first("nano.txt"))).startswith("POM_5V_IN")
    assert board_power(set(_first("xavier_l4t32.txt"))) == (
        "sum of CPU+CV+GPU+SOC+SYS5V+VDDRQ (no input rail on this module: a lower bound)")
    assert board_power(set(_first("tx1_l4t24.txt"))).startswith("none")
