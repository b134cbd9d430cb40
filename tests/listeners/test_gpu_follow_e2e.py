"""A GPU outside a row's Devices that its script turns out to use is followed, stored and
accounted, through the real CLI and a real SQLite store on a simulated two-GPU host
(tests/doubles: nvidia-smi and NVML doubles in every process; radtrack/listeners/gpu_follow.py).
The spool path (a second hello spooled, read back by ``radtrack sync``) is checked on a
spool folder in test_gpu_follow.py.

Row A has Devices=0 but its script reaches GPU 1 2.5 s after it starts; row B has
Devices=1 and works there from the start. A's smi follows GPU 1 from the look that finds
A's process (a second hello, its tags stored on A's run), A is charged its share of
GPU 1 only from then, and GPU 1's energy still closes: A's + B's + other + idle = measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu  # noqa: E402
from support import radtrack_cli  # noqa: E402

JOB = Path(__file__).resolve().parents[1] / "scripts" / "shared_gpu_job.py"
WATTS = 400.0  # GPU 1's
LATE_S = 2.5  # A's script reaches GPU 1 this long after it starts
TAG = "radtrack.listener.smi.gpu1"

pytestmark = pytest.mark.slow


def test_a_gpu_the_script_turns_out_to_use_is_followed_stored_and_accounted(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeHost(tmp_path, monkeypatch, gpus=[gpu(0), gpu(1, SECOND_UUID)])
    env = nvml_scenario.write(tmp_path / "scenario.json", [
        {"uuid": H100_UUID, "watts": 300.0, "procs": []},
        {"uuid": SECOND_UUID, "watts": WATTS, "procs": [
            # A's CUDA_VISIBLE_DEVICES is 0: it reaches GPU 1 another way (a child it started
            # with its own), so the double shows it there whatever its variable says
            {"match": "--tag a", "sm": 30, "mem_mib": 300, "after_s": LATE_S, "any_gpu": True},
            {"match": "--tag b", "sm": 50, "mem_mib": 500}]}])
    sheet = tmp_path / "follow.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
                     + "".join(f"follow,1,,,{dev},-,{JOB},smi,--tag {tag} --seconds 8,0.5\n"
                               for tag, dev in (("a", 0), ("b", 1))))
    p = radtrack_cli(str(sheet), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]

    c = MlflowClient(store)
    exp = c.get_experiment_by_name("follow")
    runs = {r.data.tags.get("radtrack.letter", "parent"): r for r in c.search_runs([exp.experiment_id])}
    a, b, parent = runs["A"], runs["B"], runs["parent"]
    tags, m = a.data.tags, a.data.metrics
    # A watched its own GPU 0, and followed GPU 1 from when its script reached it
    assert tags["radtrack.listener.smi.gpu0.uuid"] == H100_UUID
    assert tags[f"{TAG}.uuid"] == SECOND_UUID and tags[f"{TAG}.nvml_index"] == "1"
    assert tags[f"{TAG}.energy_from"] == "followed"
    start, end = a.info.start_time / 1000, a.info.end_time / 1000
    followed = float(tags[f"{TAG}.followed"])
    assert start + LATE_S - 0.5 <= followed < end, (start, followed, end)
    assert {"system/smi/gpu1/power_w", "system/smi/gpu1/proc_mem_used_mib"} <= set(m), sorted(m)
    assert "system/smi/gpu1/power_w" not in b.data.metrics  # B watches GPU 1 as its gpu0
    probe = json.loads(Path(c.download_artifacts(a.info.run_id, "telemetry/smi.json")).read_text())
    assert {x["key"] for x in probe["metrics"]} >= {"smi/gpu0/power_w", "smi/gpu1/power_w"}
    # its energy counts from the follow: the counter's 400 W from then to the run's end
    assert m["summary/smi/gpu1/energy_j"] == pytest.approx(WATTS * (end - followed), rel=0.15)
    power = c.get_metric_history(a.info.run_id, "system/smi/gpu1/power_w")
    assert min(p.timestamp for p in power) >= followed * 1000 - 1
    # accounted: A's share of GPU 1 from the follow on, none before
    assert tags["radtrack.attribution.gpu1"] and m["summary/attribution/gpu1/energy_j"] > 0
    assert m["summary/attribution/gpu0/energy_j"] > 0  # its own GPU, alone
    charged = c.get_metric_history(a.info.run_id, "system/attribution/gpu1/attributed_power_w")
    assert charged and all(p.value == 0 for p in charged if p.timestamp < (followed - 1) * 1000)
    assert any(p.value > 0 for p in charged if p.timestamp > followed * 1000)
    # GPU 1 (the parent's gpu1, by NVML index) closes over both rows
    w = parent.data.metrics
    parts = (m["summary/attribution/gpu1/energy_j"] + b.data.metrics["summary/attribution/gpu0/energy_j"]
             + w["summary/workload/gpu1/other_energy_j"] + w["summary/workload/gpu1/idle_energy_j"])
    assert parts == pytest.approx(w["summary/workload/gpu1/energy_j"], rel=0.01)
