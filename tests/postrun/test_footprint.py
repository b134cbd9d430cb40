"""Carbon footprint: the formula, where the figures come from, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import radtrack_cli

from radtrack.compute.carbon import Carbon, from_tags
from radtrack.errors import RadtrackError
from radtrack.postrun.footprint import resolve

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def test_one_kwh_at_400_g_per_kwh_and_pue_1_5_is_600_g():
    assert Carbon(400.0, "--carbon-intensity", 1.5).co2e_g(3.6e6) == pytest.approx(600.0)


def test_row_figures_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("RADTRACK_CARBON_INTENSITY", "250")
    monkeypatch.setenv("RADTRACK_PUE", "1.3")
    assert resolve(400.0, None, "sheet") == Carbon(400.0, "sheet", 1.3)
    assert resolve(None, None, "") == Carbon(250.0, "$RADTRACK_CARBON_INTENSITY", 1.3)
    assert resolve(None, 1.1, "") == Carbon(250.0, "$RADTRACK_CARBON_INTENSITY", 1.1)
    monkeypatch.delenv("RADTRACK_CARBON_INTENSITY")
    assert resolve(None, None, "") is None  # no intensity: no footprint, never a made-up one
    carbon = Carbon(250.0, "$RADTRACK_CARBON_INTENSITY", 1.3)
    assert from_tags({f"tag.{k}": v for k, v in carbon.tags().items()}) == carbon
    assert from_tags({}) is None


def test_bad_environment_values_are_named(monkeypatch):
    monkeypatch.setenv("RADTRACK_CARBON_INTENSITY", "lots")
    with pytest.raises(RadtrackError, match=r"\$RADTRACK_CARBON_INTENSITY='lots' is not a number"):
        resolve(None, None, "")
    monkeypatch.setenv("RADTRACK_CARBON_INTENSITY", "-3")
    with pytest.raises(RadtrackError, match="not in 0..5000"):
        resolve(None, None, "")


@pytest.mark.parametrize(("flags", "message"), [
    (["--carbon-intensity", "-5"], "--carbon-intensity: carbon intensity -5 g CO2e/kWh is not in 0..5000"),
    (["--carbon-intensity", "300", "--pue", "0.8"], "--pue: PUE 0.8 must be in 1..5"),
])
def test_bad_flags_are_refused_before_anything_runs(store, flags, message):
    p = radtrack_cli(*flags, "-l", "none", str(SCRIPTS / "train_ok.py"))
    assert p.returncode == 2 and message in p.stderr
    assert "hello from train_ok" not in p.stdout


def test_bad_environment_is_refused_before_anything_runs(store):
    p = radtrack_cli("-l", "none", str(SCRIPTS / "train_ok.py"), env={"RADTRACK_PUE": "7"})
    assert p.returncode == 2 and "$RADTRACK_PUE: PUE 7 must be in 1..5" in p.stderr


def test_sheet_cells_win_and_bad_cells_name_row_and_column(tmp_path):
    from radtrack.errors import SheetError
    from radtrack.sheet import read_sheet

    script = tmp_path / "s.py"
    script.write_text("pass\n")
    head = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,CarbonIntensity,PUE\n"
    good = tmp_path / "good.csv"
    good.write_text(head + f"e,1,,,,-,{script},none,,120,1.4\ne,2,,,,-,{script},none,,,\n")
    specs = read_sheet(good, {"carbon_intensity": 300.0, "carbon_source": "--carbon-intensity"})
    assert (specs[0].carbon_intensity, specs[0].carbon_source, specs[0].pue) == (120.0, "sheet", 1.4)
    assert (specs[1].carbon_intensity, specs[1].carbon_source, specs[1].pue) == (300.0, "--carbon-intensity", None)
    bad = tmp_path / "bad.csv"
    bad.write_text(head + f"e,1,,,,-,{script},none,,lots,0.5\n")
    with pytest.raises(SheetError) as err:
        read_sheet(bad)
    text = str(err.value)
    assert "bad.csv:2: column CarbonIntensity: 'lots' is not a number" in text
    assert "bad.csv:2: column PUE: the cell: PUE 0.5 must be in 1..5" in text
