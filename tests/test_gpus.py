"""GPU inventory through nvidia-smi: parsers on real H100 captures, and the double on PATH."""

from __future__ import annotations

from pathlib import Path

import pytest
from doubles.fakehost import H100_UUID, SECOND_UUID, FakeHost, gpu
from support import H100

from radtrack import gpus

MIG_DATA = Path(__file__).parent / "data" / "mig"


@pytest.fixture(autouse=True)
def _fresh_cache():
    gpus.host_tags.cache_clear()
    yield
    gpus.host_tags.cache_clear()


def test_parse_mig_profiles_from_real_h100_capture():
    profiles = gpus.parse_mig_profiles((H100 / "nvidia-smi_mig_-lgip.txt").read_text())
    assert list(profiles) == [0]
    p = profiles[0]
    assert list(p) == ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
                       "7g.80gb"]
    assert p["1g.10gb"] == gpus.MigProfile(gpu=0, name="1g.10gb", id=19, free=7, total=7,
                                           memory_gib=9.75, sms=16)
    assert (p["7g.80gb"].id, p["7g.80gb"].sms, p["3g.40gb"].total) == (0, 132, 2)


def test_parse_cuda_version_from_banner_and_q():
    assert gpus.parse_cuda_version((H100 / "nvidia-smi.txt").read_text()) == "13.0"
    assert gpus.parse_cuda_version((H100 / "nvidia-smi_-q.txt").read_text()) == "13.0"
    assert gpus.parse_cuda_version("no version here") is None


def test_parse_mig_devices_keeps_each_under_its_gpu():
    devices = gpus.parse_mig_devices((MIG_DATA / "nvidia-smi_-L_mig.txt").read_text())
    assert [(d.gpu, d.profile, d.device) for d in devices] == [
        (0, "3g.40gb", 0), (0, "1g.10gb", 1), (0, "1g.10gb", 2)]
    assert devices[1].uuid == "MIG-8c3b0f6e-41d2-5e7a-9b05-6d1c2e4f8a90"
    assert gpus.parse_mig_devices((H100 / "nvidia-smi_-L.txt").read_text()) == []


def test_parse_inventory_handles_not_available_values():
    text = f"0, {H100_UUID}, NVIDIA H100 80GB HBM3, Disabled, 580.159.04, 700.00, 200.00, 700.00, 1980\n" \
           f"1, {SECOND_UUID}, NVIDIA H100 80GB HBM3, [N/A], 580.159.04, [N/A], [N/A], [N/A], [N/A]\n"
    a, b = gpus.parse_inventory(text)
    assert (a.index, a.uuid, a.mig_enabled, a.power_max_w, a.max_sm_clock_mhz) == \
        (0, H100_UUID, False, 700.0, 1980)
    assert (b.index, b.power_limit_w, b.max_sm_clock_mhz, b.mig_mode) == (1, None, None, "[N/A]")


def test_inventory_and_host_tags_through_the_double(tmp_path, monkeypatch):
    host = FakeHost(tmp_path, monkeypatch,
                    gpus=[gpu(0), gpu(1, SECOND_UUID, mig_mode="Enabled")])
    inv = gpus.inventory()
    assert [(g.index, g.uuid, g.mig_enabled) for g in inv] == [
        (0, H100_UUID, False), (1, SECOND_UUID, True)]
    assert inv[0].driver == "580.159.04" and inv[0].power_min_w == 200.0
    tags = gpus.host_tags()
    assert tags == {"radtrack.gpu.names": "NVIDIA H100 80GB HBM3,NVIDIA H100 80GB HBM3",
                    "radtrack.gpu.uuids": f"{H100_UUID},{SECOND_UUID}",
                    "radtrack.gpu.driver": "580.159.04", "radtrack.gpu.cuda": "13.0"}
    n = len(host.calls())
    assert gpus.host_tags() == tags and len(host.calls()) == n  # cached
    assert ["mig", "-lgip", "-i", "1"] not in host.argvs()
    assert list(gpus.mig_profiles(1)) [:2] == ["1g.10gb", "1g.10gb+me"]
    assert ["mig", "-lgip", "-i", "1"] in host.argvs()


def test_no_gpu_means_empty_answers(tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch, present=False)
    assert gpus.inventory() == []
    assert gpus.host_tags() == {}
    assert gpus.mig_profiles(0) == {}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert gpus.inventory() == [] and gpus.mig_devices() == []


def test_gpu_without_mig_support_offers_no_profiles(tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch, gpus=[gpu(0, mig_supported=False, mig_mode="[N/A]")])
    assert gpus.mig_profiles(0) == {}


def test_resolve_index_by_index_uuid_and_prefix():
    inv = [gpus.Gpu(0, H100_UUID, "x", "Disabled", "1"), gpus.Gpu(1, SECOND_UUID, "x", "Disabled", "1")]
    assert gpus.resolve_index("1", inv) == 1
    assert gpus.resolve_index(SECOND_UUID, inv) == 1
    assert gpus.resolve_index("GPU-558ac94e", inv) == 0
    assert gpus.resolve_index("2", inv) is None
    assert gpus.resolve_index("GPU-ffff", inv) is None


@pytest.mark.gpu
def test_real_inventory_matches_nvml():
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        uuids = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    finally:
        pynvml.nvmlShutdown()
    inv = gpus.inventory()
    assert [g.uuid for g in inv] == [u.decode() if isinstance(u, bytes) else u for u in uuids]
    assert gpus.host_tags()["radtrack.gpu.cuda"]
