"""A run with a GPU power listener starts its script at once, and its energy still covers
the script from its first instant (radtrack/listeners/energy_backfill.py): through the real CLI and
launcher, a real SQLite store, and NVML doubles for a 300 W H100 with the driver's power
sample buffer in every process (tests/doubles/nvml_scenario.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli  # noqa: E402

WATTS = 300.0
# long enough for smi's polled readings to land inside the run's span (its trace covers
# the span only: radtrack/store/spans.py) after the listener's slow start
SCRIPT = """\
import time
print("script-start", repr(time.time()), flush=True)
time.sleep(4.0)
"""


def _run(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str,
         ring: bool = True) -> tuple[object, float, pd.DataFrame]:
    FakeHost(tmp_path, monkeypatch)
    # the listener's NVML takes 1 s to start (a slow driver), so the order is no race: a
    # script held for the listener would start after its first reading
    env = nvml_scenario.write(tmp_path / "s.json", [{"uuid": H100_UUID, "watts": WATTS, "power_ring": ring,
                                                     "procs": [{"match": "s.py", "sm": 50, "mem_mib": 500}]}],
                              listener_init_delay_s=1.0)
    (tmp_path / "s.py").write_text(SCRIPT)
    p = radtrack_cli("-e", "start", "-d", "0", "-l", "smi", "--interval", "0.1", *args,
                     str(tmp_path / "s.py"), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    started = float(next(x for x in p.stdout.splitlines() if x.startswith("script-start")).split()[1])
    client = MlflowClient(store)
    run = next(r for r in client.search_runs([client.get_experiment_by_name("start").experiment_id])
               if r.data.tags.get("radtrack.role") == "row")
    smi = pd.read_parquet(client.download_artifacts(run.info.run_id, "telemetry/smi.parquet", str(tmp_path)))
    return run, started, smi


@pytest.mark.parametrize("ring", [True, False], ids=["driver-samples", "polled-power"])
def test_the_script_starts_before_smi_reads_and_its_energy_covers_it(store, tmp_path, monkeypatch, ring):
    run, started, smi = _run(store, tmp_path, monkeypatch, ring=ring)
    tags = run.data.tags  # type: ignore[attr-defined]
    polled = smi[["time", "smi/gpu0/sm_clock_mhz"]].dropna()
    counter = smi[["time", "smi/gpu0/energy_j"]].dropna().sort_values("time")
    assert started < _first_counter_reading(run, counter)  # not held until smi had read
    # 0 J at the run's start (its script's spawn, before the script's first instant: the
    # interpreter's start-up lies between, over 1 s on a loaded 2-core CI machine)
    assert counter["smi/gpu0/energy_j"].iloc[0] == 0.0
    assert counter["time"].iloc[0] == pytest.approx(run.info.start_time / 1000, abs=0.002)  # type: ignore[attr-defined]
    assert counter["time"].iloc[0] <= started
    # the doubles' counter moves at 300 W: the recovered part is on the same line. A line's
    # time is taken after all of a reading's calls, which the doubles make slow on a loaded
    # machine (a process scan per call): 0.25 s of slack, against the more than 1 s (the
    # listener's slow start) a missing or doubled recovery would be off by
    span = counter["time"].iloc[-1] - counter["time"].iloc[0]
    assert counter["smi/gpu0/energy_j"].iloc[-1] == pytest.approx(WATTS * span, abs=0.25 * WATTS)
    # the points arrive in time order (the 0 J point first), and the run's energy summary
    # includes the recovered part
    assert smi[["time", "smi/gpu0/energy_j"]].dropna()["time"].is_monotonic_increasing
    summary = run.data.metrics["summary/smi/gpu0/energy_j"]  # type: ignore[attr-defined]
    assert summary == pytest.approx(counter["smi/gpu0/energy_j"].iloc[-1], rel=1e-9)
    source = "driver power samples" if ring else "polled power"
    assert tags["radtrack.listener.smi.gpu0.energy_backfill_source"] == source
    assert 1.0 < float(tags["radtrack.listener.smi.gpu0.energy_backfill_s"]) < 5  # the slow start
    if ring:  # the driver's samples from the start on are the run's
        samples = smi[["time", "smi/gpu0/power_sample_w"]].dropna()
        # (both traces hold a point at the span's start: its end point) the driver's samples
        # fill the listener's slow first second, where smi polled nothing
        start = counter["time"].iloc[0]

        def first_second(f: pd.DataFrame) -> pd.DataFrame:
            return f[(f["time"] > start) & (f["time"] < start + 0.9)]

        assert len(first_second(samples)) > 5 and first_second(polled).empty
        assert samples["time"].min() - counter["time"].iloc[0] < 0.05
        assert np.allclose(samples["smi/gpu0/power_sample_w"], WATTS)


def test_waiting_for_the_listeners_is_still_an_option(store, tmp_path, monkeypatch):
    monkeypatch.setenv("RADTRACK_WAIT_LISTENERS", "1")
    run, started, smi = _run(store, tmp_path, monkeypatch)
    counter = smi[["time", "smi/gpu0/energy_j"]].dropna().sort_values("time")
    start = run.info.start_time / 1000  # type: ignore[attr-defined]
    # the trace starts at the run's start, which came after smi's first counter reading:
    # the counter (0 J at the listener's own start) already holds the wait there
    assert counter["time"].iloc[0] == pytest.approx(start, abs=0.002) and started >= start
    recovered = float(run.data.tags["radtrack.listener.smi.gpu0.energy_backfill_s"])  # type: ignore[attr-defined]
    assert counter["smi/gpu0/energy_j"].iloc[0] >= WATTS * recovered - 0.25 * WATTS
    # the run's energy is its span's, the wait before it left out
    duration = run.data.metrics["summary/duration_s"]  # type: ignore[attr-defined]
    assert run.data.metrics["summary/smi/gpu0/energy_j"] == pytest.approx(WATTS * duration, abs=0.25 * WATTS)


def _first_counter_reading(run: object, counter: pd.DataFrame) -> float:
    """When smi's probe read the energy counter: the run's start plus the span recovered."""
    recovered = float(run.data.tags["radtrack.listener.smi.gpu0.energy_backfill_s"])  # type: ignore[attr-defined]
    return float(counter["time"].iloc[0]) + recovered
