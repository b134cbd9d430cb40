"""A row that asks for a GPU, MPS, MIG, Clocks or a PowerLimit on a host without a GPU, through
the real CLI (issue 38): ``--dry-run`` warns and the launch refuses, each line naming the
file, row and column (or the option); ``--allow-cpu-fallback`` runs a Devices row on CPU with
a warning. The host is the nvidia-smi double answering as without a driver, so the tests say
the same on a GPU host."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from doubles.fakehost import FakeHost
from support import radtrack_cli

SCRIPTS = Path(__file__).parents[1] / "scripts"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Clocks,PowerLimit"
NO_GPU = "no GPU listener reports a GPU on this host"
DEVICES = (": column Devices: asks for GPU 3, but no GPU listener reports a GPU on this host (no GPU "
           "driver, or its tool or library missing: 'radtrack listeners' says why), so the script "
           "would run on CPU: remove the "
           "devices to run it on CPU, or pass --allow-cpu-fallback to run it as it is")


@pytest.fixture
def no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    FakeHost(tmp_path, monkeypatch, present=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    return tmp_path


def _gpu_sheet(folder: Path) -> Path:
    sheet = folder / "gpu.csv"
    sheet.write_text(f"{HEADER}\n"
                     "g,1,,,3,-,train.py,none,,,\n"
                     "g,2,,,0,MPS,train.py,none,,,\n"
                     "g,3,,,0,1g.10gb,train.py,none,,,\n"
                     "g,4,,,0,-,train.py,none,,1410,\n"
                     "g,5,,,0,-,train.py,none,,,250\n"
                     "g,6,,,,-,train.py,none,,,\n")
    return sheet


def _expected(sheet: Path) -> list[str]:
    return [f"{sheet}:2{DEVICES}",
            f"{sheet}:3: column Collocation: MPS needs an NVIDIA GPU, but {NO_GPU}",
            f"{sheet}:4: column Collocation: MIG needs an NVIDIA GPU, but {NO_GPU}",
            f"{sheet}:5: column Clocks: Clocks needs an NVIDIA GPU, but {NO_GPU}",
            f"{sheet}:6: column PowerLimit: PowerLimit needs an NVIDIA GPU, but {NO_GPU}"]


def test_dry_run_warns_and_the_launch_refuses_gpu_rows(no_gpu: Path) -> None:
    sheet = _gpu_sheet(no_gpu)
    plan = radtrack_cli("--dry-run", str(sheet), cwd=no_gpu)
    assert plan.returncode == 0, plan.stderr
    assert "g-1" in plan.stdout and "g-6" in plan.stdout
    warnings = plan.stderr.strip().splitlines()
    for line in _expected(sheet):
        assert f"radtrack: warning: {line}" in warnings, plan.stderr
    assert f"{sheet}:7" not in plan.stderr  # the CPU row is fine
    run = radtrack_cli(str(sheet), cwd=no_gpu)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    errors = run.stderr.replace("radtrack: error: ", "").strip().splitlines()
    assert errors == _expected(sheet)
    # the fallback covers the Devices row only: MPS, MIG, Clocks and PowerLimit need a GPU
    fallback = radtrack_cli("--allow-cpu-fallback", str(sheet), cwd=no_gpu)
    assert fallback.returncode == 2
    assert f"{sheet}:2: column Devices" not in fallback.stderr.split("radtrack: error: ")[-1]
    assert _expected(sheet)[1] in fallback.stderr
    assert not (no_gpu / "mlflow.db").exists()  # nothing started


def test_allow_cpu_fallback_runs_a_devices_row_on_cpu(no_gpu: Path) -> None:
    sheet = no_gpu / "cpu.csv"
    sheet.write_text(f"{HEADER}\ng,1,,,3,-,train.py,none,,,\n")
    p = radtrack_cli("--allow-cpu-fallback", str(sheet), cwd=no_gpu)
    assert p.returncode == 0, p.stderr
    assert (f"radtrack: warning: {sheet}:2: column Devices: asks for GPU 3, but {NO_GPU}: the "
            "script runs on CPU (--allow-cpu-fallback)") in p.stderr
    assert "hello from train_ok" in p.stdout
    assert sheet.read_text().splitlines()[1].startswith("g,1,FINISHED g-1")


def test_single_script_devices_and_placement_without_a_gpu(no_gpu: Path) -> None:
    script = str(no_gpu / "train.py")
    plan = radtrack_cli("-d", "3", "--dry-run", script, cwd=no_gpu)
    assert plan.returncode == 0, plan.stderr
    assert f"radtrack: warning: command line: -d/--devices: asks for GPU 3, but {NO_GPU}" \
        in plan.stderr
    run = radtrack_cli("-d", "3", "-l", "none", script, cwd=no_gpu)
    assert run.returncode == 2
    assert run.stderr.strip() == ("radtrack: error: command line"
                                  + DEVICES.replace("column Devices", "-d/--devices"))
    mps = radtrack_cli("-d", "0", "-c", "mps", "--allow-cpu-fallback", "-l", "none", script,
                       cwd=no_gpu)
    assert mps.returncode == 2
    assert (f"command line: -c/--collocation: MPS needs an NVIDIA GPU, but {NO_GPU}"
            in mps.stderr), mps.stderr
    assert not (no_gpu / "mlflow.db").exists()


def test_cuda_visible_devices_without_a_gpu_is_a_warning(no_gpu: Path) -> None:
    sheet = no_gpu / "env.csv"
    sheet.write_text(f"{HEADER},Env\ng,1,,,,-,train.py,none,,,,CUDA_VISIBLE_DEVICES=1\n"
                     "g,2,,,,-,train.py,none,,,,CUDA_VISIBLE_DEVICES=-1\n")
    p = radtrack_cli("--dry-run", str(sheet), cwd=no_gpu)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"radtrack: warning: {sheet}:2: column Env: CUDA_VISIBLE_DEVICES=1 asks for GPUs, but "
        f"{NO_GPU}: the script runs on CPU"]  # -1 hides the GPUs: asks for none
    p = radtrack_cli("--dry-run", str(no_gpu / "train.py"), cwd=no_gpu,
                     env={"CUDA_VISIBLE_DEVICES": "0"})
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == (f"radtrack: warning: the environment's CUDA_VISIBLE_DEVICES=0 "
                                f"asks for GPUs, but {NO_GPU}: the script(s) run on CPU")


@pytest.mark.gpu
def test_a_gpu_host_runs_a_devices_row_without_a_word(store: str, tmp_path: Path) -> None:
    """On a real GPU host (the real nvidia-smi, no double): a Devices row is planned and run
    without a warning, and a GPU the host does not have is still refused by name."""
    shutil.copy(SCRIPTS / "train_ok.py", tmp_path / "train.py")
    sheet = tmp_path / "gpu.csv"
    sheet.write_text(f"{HEADER}\ng,1,,,0,-,train.py,none,,,\n")
    plan = radtrack_cli("--dry-run", str(sheet), cwd=tmp_path)
    assert plan.returncode == 0 and "warning" not in plan.stderr, plan.stderr
    run = radtrack_cli(str(sheet), cwd=tmp_path)
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr
    assert sheet.read_text().splitlines()[1].startswith("g,1,FINISHED g-1")
    sheet.write_text(f"{HEADER}\ng,2,,,99,-,train.py,none,,,\n")
    refused = radtrack_cli(str(sheet), cwd=tmp_path)
    assert refused.returncode == 2
    assert f"{sheet}:2: column Devices: device 99 is not on this host; GPUs here: 0 (" \
        in refused.stderr, refused.stderr
