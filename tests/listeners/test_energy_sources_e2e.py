"""Energy from the power sources that are not GPUs, through the CLI into a real SQLite store:
a stand-in ``tegrastats`` on PATH replaying recorded Jetson lines (tests/data/tegrastats),
and the ``rapl`` listener on a recorded powercap tree (tests/data/rapl) whose counters the
run's own script advances, wrapping one of them. The run's energy, its code windows' energy,
its CO2e and the report's columns are checked against the stored rails' integral and the
tree's true increments (issue 40: readers select series by role, never by listener name).
Each power rail (a Jetson's rails, RAPL's core and uncore) gets its own energy over the
run, ``summary/<rail>/energy_j``, never added to its device's or the run's."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import radtrack_cli, report_here, run_cli

HERE = Path(__file__).parent
TEGRA = HERE.parents[0] / "data" / "tegrastats"
RAPL = HERE.parents[0] / "data" / "rapl"
SCRIPTS = HERE.parents[0] / "scripts"
INTENSITY = 400.0  # g CO2e / kWh, PUE 1

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


def _row(uri: str, experiment: str, earlier: set[str] | frozenset[str] = frozenset()):
    """The experiment's one row run besides those of ``earlier`` (run ids)."""
    from mlflow import MlflowClient

    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None
    rows = [r for r in c.search_runs([exp.experiment_id]) if r.data.tags.get("radtrack.role") == "row"
            and r.info.run_id not in earlier]
    assert len(rows) == 1
    return c, rows[0]


def _history(c, run, key: str) -> tuple[np.ndarray, np.ndarray]:
    h = sorted(c.get_metric_history(run.info.run_id, f"system/{key}"), key=lambda m: (m.timestamp, m.step))
    assert h, f"no {key} stored"
    return np.array([m.timestamp / 1000 for m in h]), np.array([m.value for m in h])


def _report(experiment: str, env: dict[str, str]) -> dict[str, str]:
    p = run_cli("report", experiment, "--format", "csv", env=env, check=True)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 1, p.stdout
    return rows[0]


def _integral(t: np.ndarray, v: np.ndarray, a: float, b: float) -> float:
    grid = np.concatenate(([a], t[(t > a) & (t < b)], [b]))
    return float(np.trapezoid(np.interp(grid, t, v), grid))


# -- Jetson: the board's energy from its input rail or the sum of its rails ---------------

JETSONS = {
    "orin_agx_r35.txt": ("vdd_gpu_soc", "vdd_cpu_cv", "vin_sys_5v0", "vddq_vdd2_1v8ao"),
    "xavier_l4t32.txt": ("gpu", "cpu", "soc", "cv", "vddrq", "sys5v"),
}


@pytest.fixture(scope="module")
def jetsons(tmp_path_factory):
    """Each recording's tegrastats run (code windows, a carbon intensity), one launch each
    into experiment ``jetson`` of one store (one report then covers both): recording ->
    (client, row run, env, its rails, the board's stored power (t s, mW), a folder of its own)."""
    tmp = tmp_path_factory.mktemp("jetson")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    out = {}
    for recording in sorted(JETSONS):
        exe = tmp / recording / "bin" / "tegrastats"
        exe.parent.mkdir(parents=True)
        exe.write_text(FAKE.format(python=sys.executable, rec=str(TEGRA / recording)))
        exe.chmod(0o755)
        env = {"PATH": f"{exe.parent}{os.pathsep}{os.environ['PATH']}", "MLFLOW_TRACKING_URI": uri,
               "RADTRACK_HOME": str(tmp / ".radtrack")}
        radtrack_cli("-e", "jetson", "-l", "tegrastats", "--interval", "0.2", "--carbon-intensity",
                     str(INTENSITY), str(SCRIPTS / "window_epochs.py"), "--seconds", "1", env=env,
                     cwd=tmp, check=True)
        c, run = _row(uri, "jetson", {r[1].info.run_id for r in out.values()})
        t, board_mw = _history(c, run, "tegrastats/power/rails_sum_mw")
        out[recording] = (c, run, env, JETSONS[recording], t, board_mw, exe.parents[1])
    return out


@pytest.fixture(scope="module", params=sorted(JETSONS))
def jetson(request, jetsons):
    """One recording's run: (client, row run, env, rails, board t s, board mW, its folder)."""
    return jetsons[request.param]


@pytest.fixture(scope="module")
def jetson_report(jetsons) -> dict[str, dict[str, str]]:
    """``radtrack report jetson`` of both runs, once: run id -> its row."""
    env = next(iter(jetsons.values()))[2]
    p = run_cli("report", "jetson", "--format", "csv", env=env, check=True)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == len(JETSONS), p.stdout
    return {r["run_id"]: r for r in rows}


def test_tegrastats_run_gets_board_energy_windows_and_co2e(jetson):
    c, run, _, rails, t, board_mw, tmp = jetson
    assert run.data.tags["radtrack.listener.tegrastats.board_power"].startswith("sum of ")
    parts = [np.interp(t, *_history(c, run, f"tegrastats/power/{r}_mw")) for r in rails]
    np.testing.assert_allclose(board_mw, np.sum(parts, axis=0), rtol=1e-6)  # the board = its rails
    joules = np.trapezoid(board_mw / 1000, t)
    assert joules > 1

    m = run.data.metrics
    board = "power"  # tegrastats' device: the key's middle part
    assert m[f"summary/attribution/{board}/energy_j"] == pytest.approx(joules, rel=0.03)
    assert m["summary/co2e_g"] == pytest.approx(joules / 3.6e6 * INTENSITY, rel=0.03)

    windows = pd.read_parquet(c.download_artifacts(run.info.run_id, "windows/windows.parquet", str(tmp)))
    timed = windows[~windows["below_resolution"].astype(bool)]
    assert len(timed) >= 4
    lo, hi = board_mw.min() / 1000, board_mw.max() / 1000
    for w in timed.itertuples():  # inside the board's power range over the window
        assert lo * w.duration_s * 0.99 <= w.gpu_energy_j <= hi * w.duration_s * 1.01, w.name
    # a 1-s epoch spans 5 readings: its energy is the board's integral over it (the window's
    # own shaping between readings differs from linear by a fraction of one interval)
    epochs = windows[windows["name"] == "epoch"]
    assert len(epochs) == 3
    for w in epochs.itertuples():
        assert w.gpu_energy_j == pytest.approx(_integral(t, board_mw / 1000, w.start, w.end), rel=0.12), w.step


def test_each_rail_gets_its_energy_and_power_apart_from_the_board(jetson):
    """Every rail's energy over the run is the integral of its stored series (its span's
    end points included); the board's total is its own, not the board plus its rails (the
    AGX modules' board is the sum of their rails); a running average is never integrated."""
    c, run, env, rails, t, board_mw, _ = jetson
    m = run.data.metrics
    joules = np.trapezoid(board_mw / 1000, t)
    parts = 0.0
    for rail in rails:
        tr, mw = _history(c, run, f"tegrastats/power/{rail}_mw")
        assert tr[0] == pytest.approx(t[0], abs=0.002) and tr[-1] == pytest.approx(t[-1], abs=0.002)
        want = np.trapezoid(mw / 1000, tr)
        got = m[f"summary/tegrastats/power/{rail}/energy_j"]
        assert got == pytest.approx(want, rel=0.01), rail
        parts += got
        assert m[f"summary/tegrastats/power/{rail}_mw/max"] == pytest.approx(mw.max())  # its power
        assert mw.min() <= m[f"summary/tegrastats/power/{rail}_mw/mean"] <= mw.max()
        assert f"summary/tegrastats/power/{rail}_avg/energy_j" not in m  # mean since start
    assert parts == pytest.approx(joules, rel=0.01)  # the rails are the board's parts
    board = m["summary/attribution/power/energy_j"]  # the board, solo: all of it
    assert board == pytest.approx(joules, rel=0.03) and board < 1.5 * joules  # never board + rails
    assert not any(k.startswith("summary/tegrastats/power/rails_sum") and k.endswith("/energy_j")
                   for k in m)  # the board is no rail

    # radtrack export: by key, with what it is (radtrack/vocab/meaning.py)
    from radtrack.export import column_meanings, export_table

    key = f"summary/tegrastats/power/{rails[0]}/energy_j"
    table = export_table("jetson", metrics=[key], tracking_uri=env["MLFLOW_TRACKING_URI"])
    assert table[key].dropna().tolist() == [pytest.approx(m[key])]
    said = column_meanings(table).set_index("name").loc[key]
    assert said["meaning"] == f"rail {rails[0]} energy over the run (J)", said
    assert (said["scope"], said["unit"], said["role"]) == ("device", "J", "energy")


def test_tegrastats_report_shows_board_energy_power_and_co2e(jetson, jetson_report):
    """The report's columns: the board's energy, its power summary (never a rail's, never
    the running average), the footprint."""
    _, run, _, _, t, board_mw, _ = jetson
    joules = np.trapezoid(board_mw / 1000, t)
    report = jetson_report[run.info.run_id]
    assert float(report["energy_j"] or "nan") == pytest.approx(joules, rel=0.03)
    assert float(report["co2e_g"] or "nan") == pytest.approx(joules / 3.6e6 * INTENSITY, rel=0.03)
    assert board_mw.min() / 1000 - 1e-6 <= float(report["power_w_mean"]) <= board_mw.max() / 1000 + 1e-6


# -- CPU and DRAM: RAPL counters, one wrapping during the run ----------------------------

WATTS = {"intel-rapl:0": 60.0, "intel-rapl:0:0": 8.0, "intel-rapl:1": 75.0, "intel-rapl:1:0": 9.0,
         "intel-rapl:0:1": 30.0, "intel-rapl:0:2": 6.0}
DEVICES = {"intel-rapl:0": "pkg0", "intel-rapl:0:0": "pkg0/dram", "intel-rapl:1": "pkg1",
           "intel-rapl:1:0": "pkg1/dram"}
#: package 0's core and uncore subzones (client_psys's, recorded), added beside its dram
PARTS = {"intel-rapl:0:1": ("intel-rapl:0:0", "pkg0/core"), "intel-rapl:0:2": ("intel-rapl:0:1", "pkg0/uncore")}


def test_rapl_run_energy_is_cpu_plus_dram_across_a_wrap(store, tmp_path, monkeypatch, capsys):
    root = tmp_path / "powercap"
    shutil.copytree(RAPL / "server_2socket", root)
    for zone, (recorded, _) in PARTS.items():
        shutil.copytree(RAPL / "client_psys" / recorded, root / zone)
    top = int((root / "intel-rapl:1" / "max_energy_range_uj").read_text())
    (root / "intel-rapl:1" / "energy_uj").write_text(f"{top - 5_000_000}\n")  # 5 J before it wraps
    log = tmp_path / "written.json"
    # RADTRACK_WAIT_LISTENERS=1: the listener reads first (rapl does not hold the scripts by
    # itself, holds_start False: the start target), then the script advances the counters
    # for 2 s; the final reading comes after it ends
    env = {"RADTRACK_POWERCAP_ROOT": str(root), "RADTRACK_RAPL_EVERY_S": "0",
           "RADTRACK_WAIT_LISTENERS": "1"}
    radtrack_cli("-e", "cpu", "-l", "rapl", "--interval", "0.1", "--carbon-intensity", str(INTENSITY),
                 str(HERE / "rapl_windowed.py"), str(root), str(log), "--steps", "100", "--step-s", "0.02",
                 *(f"{z}={w}" for z, w in WATTS.items()), env=env, check=True)
    written = json.loads(log.read_text())
    assert 1 < written["wrap_at"]["intel-rapl:1"] < 100 and "intel-rapl:0" not in written["wrap_at"]
    c, run = _row(store, "cpu")
    m = run.data.metrics
    true_j = {}
    for zone, device in DEVICES.items():
        cumulative = written["true_uj"][zone]
        true_j[device] = cumulative[-1] / 1e6
        _, energy = _history(c, run, f"rapl/{device}/energy_j")
        # the listener's own readings are exact: each is what the script had written by then
        # (the span's two end points are interpolated between readings)
        assert all(round(e * 1e6) in set(cumulative) for e in energy[1:-1]), (device, energy)
        assert energy[-1] == pytest.approx(true_j[device], rel=0.01)
        assert m[f"summary/rapl/{device}/energy_j"] == pytest.approx(true_j[device], rel=0.01)  # each part shown
    # package 0's core and uncore: power rails, each with its energy over the run (the
    # counter's last - first over the span, the tree's true increment) and its power summary
    for zone, (_, part) in PARTS.items():
        t, energy = _history(c, run, f"rapl/{part}/energy_j")
        assert m[f"summary/rapl/{part}/energy_j"] == pytest.approx(energy[-1] - energy[0], rel=0.01)
        assert m[f"summary/rapl/{part}/energy_j"] == pytest.approx(written["true_uj"][zone][-1] / 1e6,
                                                                   rel=0.01), part
        tp, watts = _history(c, run, f"rapl/{part}/power_w")
        assert m[f"summary/rapl/{part}/power_w/max"] == pytest.approx(watts.max())
        assert m[f"summary/rapl/{part}/power_w/mean"] == pytest.approx(
            np.trapezoid(watts, tp) / (tp[-1] - tp[0]), rel=1e-3)  # its end points stored in ms
    total = sum(true_j.values())  # packages + DRAM: the rails are not in it
    report = _report("cpu", env)
    assert float(report["energy_j"]) == pytest.approx(total, rel=0.01)  # packages + DRAM, once each
    # each part shown: the host's CPU side apart, no GPU energy for a run without a GPU
    assert float(report["cpu_energy_j"]) == pytest.approx(total, rel=0.01)
    assert float(report["gpu_energy_j"] or 0) == pytest.approx(0.0, abs=1e-6)
    # and part by part: each package and DRAM (in energy_j), each rail (inside its package)
    shown = report_here(monkeypatch, capsys, "cpu", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    parts = json.loads(shown.stdout)["energy_parts"]
    counted = sum(p["energy_j"] for p in parts if p["in_energy_j"] == "yes")
    assert counted == pytest.approx(total, rel=0.01)
    rails = sorted(p["energy_j"] for p in parts if p["in_energy_j"] != "yes")
    assert rails == pytest.approx(sorted(m[f"summary/rapl/{part}/energy_j"] for _, part in PARTS.values()))
    assert float(report["co2e_g"]) == pytest.approx(total / 3.6e6 * INTENSITY, rel=0.01)
    assert m["summary/co2e_g"] == pytest.approx(total / 3.6e6 * INTENSITY, rel=0.01)

    # the code window gets the host's CPU side (packages + DRAM, no rail) as its own figure:
    # each device's stored counter at the window's ends (shaped between its readings by
    # its power), and the tree's true energy written inside the window
    first, last = written["window"]
    windows = {k.split("/")[-1]: v for k, v in m.items() if k.startswith("window/busy/")}
    assert "gpu_energy_j" not in windows and "power_w" not in windows, windows  # no GPU, no board
    a = windows["duration_s"]
    stored = true_in = 0.0
    for zone, device in DEVICES.items():
        t, energy = _history(c, run, f"rapl/{device}/energy_j")
        end = next(w.timestamp / 1000 for w in c.get_metric_history(run.info.run_id, "window/busy/duration_s"))
        stored += float(np.diff(np.interp([end - a, end], t, energy))[0])
        true_in += (written["true_uj"][zone][last] - written["true_uj"][zone][first]) / 1e6
    assert windows["cpu_energy_j"] == pytest.approx(stored, rel=0.05)
    assert windows["cpu_energy_j"] == pytest.approx(true_in, rel=0.2)
    assert windows["energy_j"] == pytest.approx(windows["cpu_energy_j"], rel=0.1)  # solo: all of it
