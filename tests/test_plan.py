"""Grouping rows into workloads and the --dry-run text."""

from __future__ import annotations

from pathlib import Path

from doubles.fakehost import SECOND_UUID, FakeHost, gpu

from radtrack.plan import format_plan, group_workloads, letter
from radtrack.spec import RunSpec


def spec(exp: str, wl: int, row: int, **kw) -> RunSpec:
    return RunSpec(experiment=exp, workload=wl, file=Path("/w/train.py"), row=row, **kw)


def test_grouping_keeps_first_appearance_order_and_assigns_letters():
    rows = [spec("e", 2, 2), spec("e", 1, 3), spec("f", 2, 4), spec("e", 2, 5), spec("e", 1, 6)]
    groups = group_workloads(rows)
    assert [[(s.experiment, s.workload, s.row, s.letter) for s in g] for g in groups] == [
        [("e", 2, 2, "A"), ("e", 2, 5, "B")], [("e", 1, 3, "A"), ("e", 1, 6, "B")],
        [("f", 2, 4, "A")]]


def test_letters_go_past_z():
    assert [letter(i) for i in (0, 1, 25, 26, 27, 51, 52)] == ["A", "B", "Z", "AA", "AB", "AZ", "BA"]


def test_format_plan_shows_rows_steps_and_environments(tmp_path, monkeypatch):
    host = FakeHost(tmp_path, monkeypatch, gpus=[gpu(0, mig_mode="Enabled"), gpu(1, SECOND_UUID)])
    rows = [spec("e", 1, 2, args=["--batch-size", "64"], devices=["0"], collocation="1g.10gb"),
            spec("e", 1, 3, devices=["1"], collocation="mps:40", listeners=["smi", "top"],
                 env={"SEED": "1"}),
            spec("e", 2, 4, devices=["1"], clocks="1410", max_epoch=3)]
    text = format_plan(group_workloads(rows), tmp_path / "r")
    for expected in (
        "workload e-1 (experiment 'e', 2 rows)",
        "  A  line 2: e-1 A",
        "     command: python /w/train.py --batch-size 64",
        "     devices: 0  collocation: 1g.10gb  listeners: default  interval: 1 s",
        "    - create MIG instance 1g.10gb on GPU 0 for row A: nvidia-smi mig -i 0 -cgi 1g.10gb -C",
        "    A: CUDA_VISIBLE_DEVICES='MIG-<created at run time>'",
        f"    B: SEED=1 CUDA_VISIBLE_DEVICES={SECOND_UUID} CUDA_DEVICE_ORDER=PCI_BUS_ID "
        f"CUDA_MPS_PIPE_DIRECTORY={tmp_path}/r/mps/gpu1/pipe",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=40",
        "workload e-2 (experiment 'e', 1 row)",
        "     limits: max_epoch 3, clocks 1410 MHz",
        "    - lock SM clocks of GPU 1 to 1410-1410 MHz: nvidia-smi -i 1 -lgc 1410,1410",
        "    A: CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID",
    ):
        assert expected in text, f"{expected!r} not in\n{text}"
    assert host.argvs(changing_only=True) == [] and host.calls("nvidia-cuda-mps-control") == []
    assert not (tmp_path / "r").exists()


def test_plain_cpu_plan_needs_no_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    text = format_plan(group_workloads([spec("cpu", 1, 2)]))
    assert "    - none (no GPU setup needed)" in text
    assert "    A: (inherited)" in text
