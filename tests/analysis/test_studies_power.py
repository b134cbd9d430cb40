"""power-variation end to end on CPU: the study's three sheets (smoke-sized, --device cpu)
merged into one launch through the real CLI into a real SQLite store, with the nvidia-smi /
MPS doubles and NVML doubles in every process standing for two H100s (400 W and 300 W,
tests/doubles/), then ``radtrack report --study``. The locked-clocks sheet runs only here,
through the doubles: the test host cannot lock clocks.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu  # noqa: E402
from studies_support import cpu_sheet  # noqa: E402
from support import radtrack_cli, report_here  # noqa: E402

WATTS = 400.0
SECOND_WATTS = 300.0
# a fixed number of smoke steps (the sheets run until MaxTime; torch's import alone may
# take that long on a loaded test host)
FINITE = {"1000000": "40", "50": "4"}
# one launch of 8 smoke-sized torch scripts: minutes on a small, shared CPU
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]



def merged_sheet(dst: Path, parts: list[Path]) -> Path:
    """One sheet of the rows of ``parts`` (each a cpu_sheet copy), columns united: a row
    without a column's cell leaves it blank (Clocks: not locked)."""
    rows = [row for part in parts for row in csv.DictReader(part.open(newline=""))]
    columns = list(dict.fromkeys(c for part in parts
                                 for c in csv.DictReader(part.open(newline="")).fieldnames or []))
    with dst.open("w", newline="") as f:
        out = csv.DictWriter(f, columns, restval="")
        out.writeheader()
        out.writerows(rows)
    return dst


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeHost]:
    """sheet.csv's solo, time-shared x2 and MPS x2 workloads (1, 2, 4), spaceshare.csv's
    one copy per GPU (6) and clocks.csv's solo at 1410 MHz (11), launched once on a host of
    two doubled GPUs; the store is this module's."""
    tmp = tmp_path_factory.mktemp("power")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp / 'mlflow.db'}")
        mp.setenv("RADTRACK_HOME", str(tmp / ".radtrack"))
        mp.chdir(tmp)
        host = FakeHost(tmp, mp, gpus=[gpu(0), gpu(1, SECOND_UUID)])
        procs = [{"match": "sgemm.py", "sm": 40, "mem_mib": 600}]
        env = nvml_scenario.write(tmp / "scenario.json", [
            {"uuid": H100_UUID, "watts": WATTS, "mps_server_sm": None, "procs": procs},
            {"uuid": SECOND_UUID, "watts": SECOND_WATTS, "procs": procs}])
        sheet = merged_sheet(tmp / "pv-all.csv", [
            cpu_sheet("power-variation", tmp / "pv.csv", workloads={1, 2, 4}, replace=FINITE),
            cpu_sheet("power-variation", tmp / "ss.csv", sheet="spaceshare.csv", replace=FINITE),
            cpu_sheet("power-variation", tmp / "pv-clocks.csv", sheet="clocks.csv",
                      workloads={11}, replace=FINITE)])
        p = radtrack_cli(str(sheet), env=env, timeout=700)
        assert p.returncode == 0, p.stderr[-3000:]
        yield host


def test_power_variation_sheets_and_report(launched, tmp_path, monkeypatch, capsys):
    # the clocks were locked for the locked workload and reset after it, through the double
    changes = launched.argvs(changing_only=True)
    assert changes == [["-i", "0", "-lgc", "1410,1410"], ["-i", "0", "-rgc"]]

    out = tmp_path / "pv-table.csv"
    p = report_here(monkeypatch, capsys, "power-variation", "--study", "power-variation",
                    "--format", "csv", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "Power, SM clock and temperature in steady state" in p.stdout
    table = pd.read_csv(out)
    table = table[table["workload"] != 6].set_index("workload")  # one GPU each: below
    assert list(table.index) == [1, 2, 4, 11]
    assert list(table["configuration"]) == ["solo", "time-shared x2", "MPS x2",
                                            "solo @ 1410 MHz"]
    assert list(table["copies"]) == [1, 2, 2, 1]
    assert set(table["gpu"]) == {H100_UUID}
    # known answers: the doubles' GPU draws a constant 400 W at 345 MHz and 38 C
    assert table["power_w_mean"].tolist() == pytest.approx([WATTS] * 4)
    assert table["power_w_cv"].tolist() == pytest.approx([0.0] * 4, abs=1e-12)
    assert table["power_w_p5"].tolist() == pytest.approx([WATTS] * 4)
    assert table["power_w_p95"].tolist() == pytest.approx([WATTS] * 4)
    assert table["sm_clock_mhz_mean"].tolist() == pytest.approx([345.0] * 4)
    assert table["temp_c_mean"].tolist() == pytest.approx([38.0] * 4)
    assert (table["throughput_metric"] == "throughput_tflops").all()
    assert (table["window_rule"] == "throughput blocks").all()
    # per copy x copies = total; energy per TFLOP = mean power / total TFLOP/s
    assert table["throughput_total"].tolist() == pytest.approx(
        (table["throughput_per_copy"] * table["copies"]).tolist())
    assert table["energy_per_unit_j"].tolist() == pytest.approx(
        (WATTS / table["throughput_total"]).tolist())
    assert (table["work_unit"] == "tflop").all()

    # json carries the same table; a workload filter keeps only its rows
    p = report_here(monkeypatch, capsys, "power-variation", "--study", "power-variation",
                    "--workload", "2", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["workload"] for r in doc["configurations"]] == [2]


def test_unknown_study_is_one_clear_line(store, monkeypatch, capsys):
    p = report_here(monkeypatch, capsys, "anything", "--study", "power-varation")
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.strip() == ("radtrack report: unknown study 'power-varation'; studies: "
                                "power-variation, multi-level-utilisation, time-to-accuracy, "
                                "host-gpu-eda, attribution")


def test_space_sharing_sheet_on_two_gpus(launched, tmp_path, monkeypatch, capsys):
    """examples/studies/power-variation/spaceshare.csv (one copy per GPU at once) on two
    doubled GPUs (issue 29, the CPU part): one table row per GPU, each copy measured on its
    own GPU, against a solo copy of the same script."""
    out = tmp_path / "table.csv"
    p = report_here(monkeypatch, capsys, "power-variation", "--study", "power-variation",
                    "--format", "csv", "--out", str(out))
    assert p.returncode == 0, p.stderr
    table = pd.read_csv(out)
    shared = table[table["workload"] == 6]
    assert set(shared["gpu"]) == {H100_UUID, SECOND_UUID}  # copy by copy, one per GPU
    assert set(shared["configuration"]) == {"space-shared x2 GPUs"}
    by_gpu = shared.set_index("gpu")
    assert by_gpu.loc[H100_UUID, "power_w_mean"] == pytest.approx(WATTS)
    assert by_gpu.loc[SECOND_UUID, "power_w_mean"] == pytest.approx(SECOND_WATTS)
    assert list(table.loc[table["workload"] == 1, "configuration"]) == ["solo"]
