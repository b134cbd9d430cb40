"""Span-exact runs on a shared GPU (issue 38): a time-shared pair of different lengths through
the real CLI and launcher, a real SQLite store, NVML doubles in every process (a 400 W H100
whose energy counter and power ring follow the wall clock: tests/doubles/nvml_scenario.py).
Each run's smi series, energy counter, power summary and attributed energy end at its own
end; the workload's accounting still sees the GPU to the end (from the longer run's
readings) and its parts add up to the GPU's energy. The same on an H100: the ``gpu`` test."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from support import HAS_GPU, radtrack_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402

from radtrack.vocab import schema  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parents[1] / "scripts" / "shared_gpu_job.py"
HEADER = "Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,Env\n"
WATTS = 400.0

# energies are checked against watts x duration: the listeners must start on time
pytestmark = [pytest.mark.slow, pytest.mark.timing]


def _rows(client: MlflowClient, experiment: str) -> tuple[object, object, object]:
    """(short run, long run, workload run) of the experiment's one workload."""
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=50)
    rows = sorted((r for r in runs if r.data.tags.get(schema.ROLE) == schema.ROLE_ROW),
                  key=lambda r: r.data.metrics[schema.DURATION_KEY])
    parent = next(r for r in runs if r.data.tags.get(schema.ROLE) == schema.ROLE_WORKLOAD)
    assert len(rows) == 2
    return rows[0], rows[1], parent


def _series(db: Path, run_id: str, key: str) -> pd.DataFrame:
    with sqlite3.connect(db) as con:
        return pd.read_sql_query("SELECT timestamp, step, value FROM metrics WHERE run_uuid = ? "
                                 "AND key = ? ORDER BY timestamp, step", con, params=(run_id, key))


def check_pair(store: str, experiment: str, watts: float | None, gpu: str = "gpu0") -> None:
    """The checks of a time-shared pair, on the doubles (``watts``: the GPU's constant power)
    or a real GPU (None)."""
    client = MlflowClient(store)
    short, long, parent = _rows(client, experiment)
    db = Path(store.removeprefix("sqlite:///"))
    smi = f"system/smi/{gpu}/"
    for run in (short, long):
        m = run.data.metrics
        start_ms, end_ms, duration = run.info.start_time, run.info.end_time, m[schema.DURATION_KEY]
        with sqlite3.connect(db) as con:
            spans = con.execute("SELECT key, MIN(timestamp), MAX(timestamp) FROM metrics WHERE "
                                "run_uuid = ? AND (key LIKE ? OR key LIKE 'system/attribution/%') "
                                "GROUP BY key", (run.info.run_id, smi + "%")).fetchall()
        keys = {k for k, *_ in spans}
        assert {smi + "power_w", smi + "energy_j", smi + "proc_sm_util_pct",
                f"system/attribution/{gpu}/attributed_power_w"} <= keys, sorted(keys)
        for key, first, last in spans:  # GPU series and attributed power: in its span only
            assert start_ms <= first and last <= end_ms, (run.info.run_name, key, first - start_ms, last - end_ms)
        # its energy counter is its own span's; its power summary is the span's mean
        energy = m[schema.summary_key(f"smi/{gpu}/energy_j")]
        power = _series(db, run.info.run_id, smi + "power_w")
        t = power["timestamp"].to_numpy() / 1000
        assert t[0] - start_ms / 1000 < 0.002 and end_ms / 1000 - t[-1] < 0.002  # it covers the span
        mean = m[schema.summary_key(f"smi/{gpu}/power_w", "mean")]
        integral = float(np.trapezoid(power["value"].to_numpy(), t))
        assert mean * duration == pytest.approx(integral, rel=0.01)
        assert m[schema.summary_key(f"smi/{gpu}/power_w", schema.READINGS_STAT)] == len(power) - 2
        if watts is not None:
            assert energy == pytest.approx(watts * duration, rel=0.05), run.info.run_name
            assert mean == pytest.approx(watts, rel=0.02)
        else:  # a real GPU: the counter agrees with the power over the span
            assert energy == pytest.approx(integral, rel=0.15), run.info.run_name
    s, lg = short.data.metrics, long.data.metrics
    # the short run's figures are not the workload's (they were, before its listeners
    # stopped at its end: the same counter delta on both runs)
    key = schema.summary_key(f"smi/{gpu}/energy_j")
    assert s[key] < 0.8 * lg[key]
    # the workload still sees the GPU to its end, and its parts add up (closure)
    p = parent.data.metrics
    gpu_j = p[schema.workload_key(gpu, "energy_j")]
    ea = s[schema.attribution_summary_key(gpu, "energy_j")]
    eb = lg[schema.attribution_summary_key(gpu, "energy_j")]
    parts = ea + eb + p[schema.workload_key(gpu, "other_energy_j")] + p[schema.workload_key(gpu, "idle_energy_j")]
    assert parts == pytest.approx(gpu_j, rel=0.01)
    span = p[schema.workload_key("duration_s")]
    assert span == pytest.approx(max(short.info.end_time, long.info.end_time) / 1000
                                 - min(short.info.start_time, long.info.start_time) / 1000, abs=0.5)
    if watts is not None:
        assert gpu_j == pytest.approx(watts * span, rel=0.05)
    assert ea > 0 and eb > 0 and ea <= s[key] * 1.01  # charged within its own span's energy


@pytest.fixture
def gpu_host(store, tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch)
    return tmp_path


def test_a_time_shared_pair_of_different_lengths_each_ends_at_its_own_end(gpu_host, store):
    tmp = gpu_host
    env = nvml_scenario.write(tmp / "scenario.json", [{
        "uuid": H100_UUID, "watts": WATTS, "power_ring": True,
        "procs": [{"match": "--tag a", "sm": 75, "mem_mib": 1200},
                  {"match": "--tag b", "sm": 25, "mem_mib": 300}]}])
    sheet = tmp / "pair.csv"
    sheet.write_text(HEADER + "".join(
        f"spans,1,0,-,{JOB},smi,--tag {tag} --seconds {seconds:g},0.1,\n"
        for tag, seconds in (("a", 2), ("b", 5))))
    p = radtrack_cli(str(sheet), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    check_pair(store, "spans", WATTS)


# sgemm runs until its MaxTime (0.2 min = 12 s, 0.4 min = 24 s: torch's import included) stops it
SGEMM_SHEET = ("Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,MaxTime\n"
               + "".join(f"gpuspans,1,0,-,{REPO / 'workloads' / 'sgemm.py'},smi+top,"
                         f"--steps 1000000 --size 8192,0.1,{minutes}\n" for minutes in (0.2, 0.4)))


@pytest.mark.gpu
def test_a_time_shared_sgemm_pair_on_a_real_gpu_each_ends_at_its_own_end(store, tmp_path):
    """Two sgemm rows time-sharing GPU 0 (12 s and 24 s, smi+top at 0.1 s): each run's GPU
    series, energy, power summary and attributed energy end at its own end."""
    if not HAS_GPU:
        pytest.skip("gpu: no NVIDIA GPU/NVML on this host")
    sheet = tmp_path / "sgemm.csv"
    sheet.write_text(SGEMM_SHEET)
    p = radtrack_cli(str(sheet), timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    check_pair(store, "gpuspans", None)
