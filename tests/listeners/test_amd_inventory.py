"""The GPU inventory is what the listeners declare (issue 48): smi's NVIDIA GPUs through NVML,
amdsmi's AMD GPUs through ROCm's bindings (their doubles, in this process), each with the
variable that selects it; the launcher's inventory is their union, its placement sets each
GPU's own variable, and its checks refuse what it cannot tell or do on another vendor's GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from gpu_doubles import H100_NAME, H100_UUID, FakeGpu, FakeNvml

from radtrack import gpus
from radtrack.listeners import amd_reads
from radtrack.listeners.amd import AmdSmiListener
from radtrack.listeners.smi import SmiListener
from radtrack.placement.plain import PlainPlacement
from radtrack.sheet.host import check_against_host, check_gpu_requests
from radtrack.sheet.records import Problems
from radtrack.spec import RunSpec

sys.path.insert(0, str(Path(__file__).parents[1] / "doubles"))
import amdsmi_scenario  # noqa: E402

MI300X = "AMD Instinct MI300X"
AMD_UUID = "0cff74a1-0000-1000-80e8-7e7f1ad43cdd"


@pytest.fixture
def amd_double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The amdsmi double loaded under another name (this process's ``amdsmi`` stays absent),
    answering for two MI300X, the second without a UUID (its ASIC serial stands in)."""
    env = amdsmi_scenario.write(tmp_path / "amd.json", [
        {"uuid": AMD_UUID, "name": MI300X, "watts": 300, "mem_total_mib": 196_592},
        {"uuid": "", "name": MI300X, "serial": "0x5A1B", "watts": 100, "unsupported": ["uuid"]}])
    monkeypatch.setenv("RADTRACK_FAKE_AMDSMI", env["RADTRACK_FAKE_AMDSMI"])
    spec = importlib.util.spec_from_file_location(
        "amdsmi_double", amdsmi_scenario.SITE / "amdsmi" / "__init__.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(amd_reads, "library", lambda: module)
    return module


def test_each_listener_declares_its_gpus_and_their_variable(monkeypatch: pytest.MonkeyPatch,
                                                             amd_double: ModuleType) -> None:
    FakeNvml(monkeypatch, [FakeGpu(), FakeGpu(uuid="GPU-1111")])
    nvidia = SmiListener.inventory()
    assert [(d.index, d.uuid, d.name, d.vendor, d.listener, d.visibility) for d in nvidia] == [
        (0, H100_UUID, H100_NAME, "NVIDIA", "smi", ("CUDA_VISIBLE_DEVICES",)),
        (1, "GPU-1111", H100_NAME, "NVIDIA", "smi", ("CUDA_VISIBLE_DEVICES",))]
    assert nvidia[0].memory_mib == pytest.approx(FakeGpu().mem_total / 2**20)
    amd = AmdSmiListener.inventory()
    assert [(d.index, d.uuid, d.name, d.vendor, d.listener, d.visible_env) for d in amd] == [
        (0, AMD_UUID, MI300X, "AMD", "amdsmi", "ROCR_VISIBLE_DEVICES"),
        (1, "0x5A1B", MI300X, "AMD", "amdsmi", "ROCR_VISIBLE_DEVICES")]
    assert amd[0].memory_mib == 196_592
    assert "HIP_VISIBLE_DEVICES" in amd[0].visibility
    monkeypatch.setattr(amd_reads, "library", lambda: (_ for _ in ()).throw(ImportError("no ROCm")))
    assert AmdSmiListener.inventory() == []  # no ROCm here: no AMD GPU, no error


def test_the_launchers_inventory_is_the_union_and_placement_sets_each_gpus_variable(
        monkeypatch: pytest.MonkeyPatch, amd_double: ModuleType) -> None:
    monkeypatch.setattr(gpus, "nvidia_inventory", lambda: [])  # an AMD host: nvidia-smi finds none
    host = gpus.inventory()
    assert [(g.index, g.vendor, g.listener, g.nvidia) for g in host] == [
        (0, "AMD", "amdsmi", False), (1, "AMD", "amdsmi", False)]
    rows = [RunSpec("e", 1, Path("s.py"), devices=["1"], row=2), RunSpec("e", 1, Path("s.py"), devices=["0", "1"], row=3),
            RunSpec("e", 1, Path("s.py"), devices=["7"], row=4)]
    plain = PlainPlacement(rows, host)
    assert plain.env_for(rows[0]) == {"ROCR_VISIBLE_DEVICES": "1", "RADTRACK_DEVICES": "1"}
    assert plain.env_for(rows[1]) == {"ROCR_VISIBLE_DEVICES": "0,1", "RADTRACK_DEVICES": "0,1"}
    # a GPU no listener declares (a run on CPU with --allow-cpu-fallback): CUDA's, as always
    assert plain.env_for(rows[2]) == {"CUDA_VISIBLE_DEVICES": "7", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    h100 = gpus.Gpu(index=0, uuid=H100_UUID, name=H100_NAME, mig_mode="Disabled", driver="580")
    assert PlainPlacement(rows, [h100]).env_for(rows[0]) == {
        "CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def test_an_index_on_a_host_with_two_vendors_is_refused_and_a_uuid_is_not(amd_double: ModuleType) -> None:
    h100 = gpus.Gpu(index=0, uuid=H100_UUID, name=H100_NAME, mig_mode="Disabled", driver="580")
    host = [h100, *(gpus.Gpu.of(d) for d in AmdSmiListener.inventory())]
    problems = Problems(Path("mixed.csv"))
    check_against_host([RunSpec("e", 1, Path("s.py"), devices=["0"], row=2),
                        RunSpec("e", 1, Path("s.py"), devices=[H100_UUID[:12]], row=3),
                        RunSpec("e", 1, Path("s.py"), devices=["1"], row=4)], problems, host)
    assert problems.items == [
        "mixed.csv:2: column Devices: device 0 names GPU 0 (NVIDIA H100 80GB HBM3, read by smi) and "
        "GPU 0 (AMD Instinct MI300X, read by amdsmi): each vendor numbers its GPUs from 0, so radtrack "
        "cannot tell which; name an NVIDIA GPU by its UUID (GPU-...)"]


def test_an_inherited_hip_selection_beside_an_amd_row_is_a_warning(amd_double: ModuleType) -> None:
    host = [gpus.Gpu.of(d) for d in AmdSmiListener.inventory()]
    problems, said = Problems(Path("amd.csv")), []
    rows = [RunSpec("e", 1, Path("s.py"), devices=["1"], row=2), RunSpec("e", 1, Path("s.py"), row=3)]
    check_gpu_requests(rows, problems, host, warn=said.append,
                       environ={"HIP_VISIBLE_DEVICES": "2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert problems.items == []
    assert said == ["amd.csv:2: column Devices: the environment's HIP_VISIBLE_DEVICES=2 selects among the "
                    "GPUs radtrack gives the script in ROCR_VISIBLE_DEVICES (Devices 1), so it may see "
                    "another GPU or none: unset it before the launch"]
    said.clear()
    check_gpu_requests(rows, problems, host, warn=said.append, environ={})
    assert said == []
