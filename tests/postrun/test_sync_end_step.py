"""``radtrack sync`` runs the launcher's end-of-workload step for a workload whose store was
away throughout (issue 26): co-location accounting, workload totals, the footprint, code
windows' energy, as a live launch stores them (radtrack/postrun/synced.py).

Through the real CLI on a simulated H100 (tests/doubles: nvidia-smi and NVML doubles): the
same co-located sheet (a script with code windows and a training job, time-sharing GPU 0)
runs once against a live SQLite store and once while another writer holds that store
locked; after ``radtrack sync`` the synced workload's runs carry the same metrics, tags and
artifacts as the live one's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli, run_cli, sqlite_locked  # noqa: E402

from radtrack.vocab import schema  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval,Env\n"
WATTS = 400.0
# what only sync records (when it ran the end step)
SYNC_ONLY = ("radtrack.synced_end",)

pytestmark = [pytest.mark.slow, pytest.mark.timing]


def _sheet(path: Path, experiment: str) -> Path:
    path.write_text(HEADER + "".join(
        f"{experiment},1,,,0,-,{SCRIPTS / name},smi,{params},0.1,JOB_RATE=50\n"
        for name, params in (("window_epochs.py", "--tag a --seconds 1"),
                             ("shared_gpu_job.py", "--tag b --seconds 3"))))
    return path


def _workload(c: MlflowClient, experiment: str) -> dict[str, object]:
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None
    runs = c.search_runs([exp.experiment_id])
    return {r.data.tags.get("radtrack.letter", "parent"): r for r in runs}


def _keys(names, drop=()) -> set[str]:
    return {k for k in names if not k.startswith(drop)}


def _artifacts(c: MlflowClient, run_id: str) -> set[str]:
    out: set[str] = set()
    for a in c.list_artifacts(run_id):
        out |= ({b.path for b in c.list_artifacts(run_id, a.path)} if a.is_dir else {a.path})
    return out


def test_sync_stores_what_the_launchers_end_step_stores(store: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "scenario.json", [{
        # the driver's power-sample ring as on an H100, 10 s deep: the counter's error bar over a
        # window at the run's very start then has samples however late smi starts under load
        "uuid": H100_UUID, "watts": WATTS, "power_ring": True, "ring_depth": 500,
        "procs": [{"match": "--tag a", "sm": 75, "mem_mib": 1200},
                  {"match": "--tag b", "sm": 25, "mem_mib": 300}]}])
    args = ("--carbon-intensity", "400")
    live = radtrack_cli(*args, str(_sheet(tmp_path / "live.csv", "live")), env=env, timeout=300)
    assert live.returncode == 0, live.stderr[-3000:]

    with sqlite_locked(tmp_path / "mlflow.db"):
        away = radtrack_cli(*args, str(_sheet(tmp_path / "away.csv", "away")),
                            env={**env, "RADTRACK_STORE_WAIT_S": "2"}, timeout=300)
    assert away.returncode == 0, away.stderr[-3000:]
    assert "Traceback" not in away.stderr and "spooled in" in away.stderr, away.stderr[-3000:]

    s = run_cli("sync", env=env)  # in-process: the lock is gone; no process boundary tested
    assert s.returncode == 0, s.stdout + s.stderr
    assert "2 run(s) stored, 0 left" in s.stdout and "end step" in s.stdout, s.stdout

    c = MlflowClient(store)
    want, got = _workload(c, "live"), _workload(c, "away")
    assert sorted(want) == sorted(got) == ["A", "B", "parent"]
    diffs = {}
    for who in want:
        w, g = want[who], got[who]
        assert g.info.status == w.info.status == "FINISHED"
        for what, a, b in (("metrics", g.data.metrics, w.data.metrics), ("tags", g.data.tags, w.data.tags),
                           ("artifacts", _artifacts(c, g.info.run_id), _artifacts(c, w.info.run_id))):
            a, b = _keys(a, SYNC_ONLY), _keys(b)
            if a != b:
                diffs[(who, what)] = {"synced only": sorted(a - b), "live only": sorted(b - a)}
        for key, value in w.data.tags.items():
            if key.startswith("radtrack.attribution"):  # the method, the GPU
                assert g.data.tags[key] == value, (who, key)
    assert diffs == {}
    parent, a = got["parent"], got["A"]
    assert "radtrack.synced_end" in parent.data.tags
    assert {"window/epoch/energy_j", "window/eval/gpu_energy_j", "summary/attribution/gpu0/energy_j",
            schema.CO2E_KEY} <= set(a.data.metrics), sorted(a.data.metrics)
    assert {"summary/workload/co2e_g", "summary/workload/energy_j"} <= set(parent.data.metrics)
    # the GPU's energy over the workload: the counter's 400 W over its span, split A/B/idle
    total = parent.data.metrics["summary/workload/gpu0/energy_j"]
    assert total == pytest.approx(WATTS * parent.data.metrics["summary/workload/duration_s"], rel=0.1)
    parts = sum(got[x].data.metrics["summary/attribution/gpu0/energy_j"] for x in ("A", "B"))
    parts += parent.data.metrics["summary/workload/gpu0/idle_energy_j"]
    parts += parent.data.metrics["summary/workload/gpu0/other_energy_j"]
    assert parts == pytest.approx(total, rel=0.01)
