"""Which listeners a row runs is settled once its script has been released (radtrack/run/start.py
``check_listeners``, radtrack/run/launch.py): the availability check starts NVML and the
listeners are forked from the launcher, which would otherwise hold the script at its barrier.
Through the real CLI and a SQLite store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli, run_cli  # noqa: E402


def _row(store: str, experiment: str):
    client = MlflowClient(store)
    exp = client.get_experiment_by_name(experiment)
    return next(r for r in client.search_runs([exp.experiment_id])
                if r.data.tags.get("radtrack.role") == "row")


def test_the_nvml_check_comes_after_the_script_is_released(store, tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch)
    log = tmp_path / "init.jsonl"
    env = nvml_scenario.write(tmp_path / "s.json", [{"uuid": H100_UUID, "watts": 300.0}],
                              init_log=str(log))
    (tmp_path / "s.py").write_text("print('ran')\n")
    p = radtrack_cli("-e", "check", "-d", "0", "-l", "smi+top", "--interval", "0.1",
                     str(tmp_path / "s.py"), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    inits = [json.loads(line) for line in log.read_text().splitlines()]
    assert inits, "the launcher never asked NVML whether smi can run"
    first = inits[0]  # the launcher's availability check: the first NVML start outside a listener
    assert "radtrack" in " ".join(first["argv"]), first
    assert first["script_children"] == 1, first  # the script's process was already there
    run = _row(store, "check")
    # the row's start (its run's start time) is its release: the check came after it
    assert first["t"] * 1000 >= run.info.start_time, (first, run.info.start_time)
    assert run.data.params["listeners"] == "smi+top"
    assert "radtrack.listener.smi" not in run.data.tags or \
        not run.data.tags["radtrack.listener.smi"].startswith("unavailable")


def test_a_named_listener_that_cannot_run_is_tagged_and_left_out(store, tmp_path):
    (tmp_path / "s.py").write_text("print('ran')\n")
    # tegrastats reads a Jetson's power; no test host is one
    p = radtrack_cli("-e", "named", "-l", "tegrastats+top", "--interval", "0.1", str(tmp_path / "s.py"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "listener tegrastats unavailable: " in p.stderr
    run = _row(store, "named")
    assert run.info.status == "FINISHED"
    assert run.data.tags["radtrack.listener.tegrastats"].startswith("unavailable: ")
    assert run.data.params["listeners"] == "top"  # what ran, not what was asked


def test_default_listeners_that_cannot_run_are_named_once_and_left_out(store, tmp_path):
    """issue 52: the dry run and the launch both name each default listener this host cannot
    offer, with why; the run gets no tag for it (it was never asked for)."""
    from radtrack.listeners.registry import availability, sampling_names

    (tmp_path / "s.py").write_text("print('ran')\n")
    missing = {n: availability(n).reason for n in sampling_names() if not availability(n)}
    assert "tegrastats" in missing  # no test host is a Jetson board
    plan = run_cli("--dry-run", "-e", "default", str(tmp_path / "s.py"))  # in-process: no launch
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "listeners this host cannot offer:" in plan.stdout
    for name, why in missing.items():
        assert f"  {name}: {why} (a default listener: left out)" in plan.stdout
    p = radtrack_cli("-e", "default", "--interval", "0.1", str(tmp_path / "s.py"))
    assert p.returncode == 0, p.stderr[-3000:]
    for name in missing:
        # the launch is a fresh process: its why may read the host afresh (an NVML library this
        # test process already initialised and shut down answers "Uninitialized" here), so
        # each is named once, with a why, and left out
        said = [line for line in p.stderr.splitlines()
                if f"listener {name} unavailable: " in line and line.endswith("(a default listener: left out)")]
        assert len(said) == 1, (name, p.stderr[-3000:])
    run = _row(store, "default")
    ran = run.data.params["listeners"].split("+")
    assert "top" in ran and "tegrastats" not in ran
    assert not any(v.startswith("unavailable") for k, v in run.data.tags.items()
                   if k.startswith("radtrack.listener."))
