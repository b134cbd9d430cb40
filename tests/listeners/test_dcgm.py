"""dcgm listener: the dcgmi dmon parser on recordings, the dcgmi subprocess backend with its
field-set fallback (a stand-in dcgmi on PATH), and the NVML GPM backend through doubles."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest
from gpu_doubles import H100_GPM, FakeGpu, FakeNvml, mig_gpu

from radtrack.listeners import nvml, runner
from radtrack.listeners.base import ListenerConfig
from radtrack.listeners.dcgm import DcgmiError, DcgmListener, DmonParser

DATA = Path(__file__).parents[1] / "data" / "dcgmi"
ALL_FIELDS = list(range(1001, 1013))


@pytest.fixture(autouse=True)
def _fresh_nvml():
    nvml.reset()
    yield
    nvml.reset()


def _rows(name: str, fields: list[int]) -> list[tuple[int, dict[int, float]]]:
    parser = DmonParser(fields)
    return [r for line in (DATA / name).read_text().splitlines() if (r := parser.parse(line))]


def test_parser_reads_profiling_rows_and_skips_na():
    rows = _rows("dmon_profiling_2gpu.txt", ALL_FIELDS)
    assert [gpu for gpu, _ in rows] == [0, 1, 0, 1, 0, 1]
    assert rows[0][1] == {} and rows[1][1] == {}  # all N/A before DCGM has two samples
    gpu0 = rows[2][1]
    assert gpu0[1002] == 0.893 and gpu0[1009] == 20872512 and gpu0[1012] == 0
    assert 1005 not in rows[4][1] and rows[4][1][1002] == 0.901  # one N/A in a later row


def test_parser_small_field_set():
    rows = _rows("dmon_core_1gpu.txt", [1002, 1003, 1004, 1005])
    assert rows[-1] == (0, {1002: 0.498, 1003: 0.199, 1004: 0.0, 1005: 0.097})


@pytest.mark.parametrize(("name", "message"), [
    ("dmon_error_not_supported.txt", "Profiling is not supported"),
    ("dmon_error_no_hostengine.txt", "unable to establish a connection"),
])
def test_parser_raises_dcgmi_errors(name, message):
    with pytest.raises(DcgmiError, match=message):
        _rows(name, ALL_FIELDS)


def test_parser_rejects_columns_that_do_not_match_the_fields():
    with pytest.raises(DcgmiError, match="4 columns for 12 fields"):
        _rows("dmon_core_1gpu.txt", ALL_FIELDS)


# -- the dcgmi backend, with a stand-in dcgmi that behaves like the recordings ------------

FAKE_DCGMI = """\
#!{python}
import sys, time
args = sys.argv[1:]
fields = [int(f) for f in args[args.index("-e") + 1].split(",")]
delay = int(args[args.index("-d") + 1]) / 1000
gpus = args[args.index("-i") + 1].split(",") if "-i" in args else ["0"]
with open({log!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
if 1011 in fields:  # this "GPU" cannot watch NVLink fields together with the rest
    print(open({error!r}).read(), end="", flush=True)
    sys.exit(1)
value = {{1001: "0.991", 1002: "0.893", 1003: "0.132", 1004: "0.051", 1005: "0.041",
         1009: "20872512", 1010: "35136000"}}
print("#Entity   " + "  ".join("F%d" % f for f in fields))
print("ID", flush=True)
first = True
while True:
    for g in gpus:
        vals = ["N/A" if first else value.get(f, "0.000") for f in fields]
        print("GPU %s     " % g + "  ".join(vals), flush=True)
    first = False
    time.sleep(delay)
"""


@pytest.fixture
def fake_dcgmi(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "dcgmi.log"
    exe = bindir / "dcgmi"
    exe.write_text(FAKE_DCGMI.format(python=sys.executable, log=str(log),
                                     error=str(DATA / "dmon_error_not_supported.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return log


def test_dcgmi_backend_falls_back_to_a_smaller_field_set(monkeypatch, fake_dcgmi):
    gpus = [FakeGpu(gpm=None), FakeGpu(uuid="GPU-2", gpm=None)]  # no GPM: dcgmi must do it
    FakeNvml(monkeypatch, gpus)
    assert DcgmListener.available()
    dcgm = DcgmListener(ListenerConfig(interval=0.1, devices=["1"]))
    try:
        keys = {s.key for s in dcgm.probe()}
        tags = dcgm.tags()
        assert tags["radtrack.listener.dcgm.backend"] == "dcgmi"
        assert "Profiling is not supported" in tags["radtrack.listener.dcgm.notes"]
        assert set(tags["radtrack.listener.dcgm.unsupported"].split(",")) == {
            "fp64_active_pct", "fp32_active_pct", "fp16_active_pct",
            "nvlink_tx_bytes_per_s", "nvlink_rx_bytes_per_s"}
        assert keys == {f"dcgm/gpu0/{q}" for q in (
            "gr_engine_active_pct", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
            "dram_active_pct", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s")}
        deadline = time.monotonic() + 5
        while "dcgm/gpu0/sm_active_pct" not in (s := dcgm.sample()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s["dcgm/gpu0/sm_active_pct"] == pytest.approx(89.3)
        assert s["dcgm/gpu0/pcie_tx_bytes_per_s"] == 20872512
    finally:
        dcgm.close()
        dcgm.close()  # safe twice
    calls = fake_dcgmi.read_text().splitlines()
    assert calls[0].startswith("dmon -e 1001,1002,1003,1004,1005,1006,1007,1008,1009,1010,1011,1012 -d 100")
    assert calls[1] == "dmon -e 1001,1002,1003,1004,1005,1009,1010 -d 100 -i 1"  # the run's gpu0 is GPU 1


# -- the GPM backend -------------------------------------------------------------------

def _no_dcgmi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))


def test_gpm_backend_without_dcgmi(monkeypatch, tmp_path):
    _no_dcgmi(monkeypatch, tmp_path)
    FakeNvml(monkeypatch, [FakeGpu()])
    assert DcgmListener.available()
    dcgm = DcgmListener(ListenerConfig(interval=0.01))
    keys = {s.key for s in dcgm.probe()}
    tags = dcgm.tags()
    assert tags["radtrack.listener.dcgm.backend"] == "gpm"
    # gpm-probe.txt has no FP64, PCIe or NVLink readings: they are not offered, not faked
    assert set(tags["radtrack.listener.dcgm.unsupported"].split(",")) == {
        "fp64_active_pct", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s",
        "nvlink_rx_bytes_per_s", "nvlink_tx_bytes_per_s"}
    s = dcgm.sample()
    assert set(s) == keys
    assert s["dcgm/gpu0/sm_active_pct"] == pytest.approx(H100_GPM[2])
    assert s["dcgm/gpu0/tensor_active_pct"] == pytest.approx(H100_GPM[5])
    assert s["dcgm/gpu0/gr_engine_active_pct"] == pytest.approx(H100_GPM[1])
    dcgm.close()
    dcgm.close()


def test_gpm_backend_for_a_mig_instance(monkeypatch, tmp_path):
    _no_dcgmi(monkeypatch, tmp_path)
    parent = mig_gpu(2)
    fake = FakeNvml(monkeypatch, [parent])
    dcgm = DcgmListener(ListenerConfig(interval=0.01, devices=[parent.mig[1].uuid]))
    dcgm.probe()
    assert dcgm.sample()["dcgm/gpu0/sm_occupancy_pct"] == pytest.approx(H100_GPM[3])
    gi_used = {c.args[1] for c in fake.calls["nvmlGpmMigSampleGet"].call_args_list}
    assert gi_used == {8}  # the instance's own GPU instance id
    dcgm.close()


def test_unavailable_without_dcgmi_or_gpm(monkeypatch, tmp_path):
    _no_dcgmi(monkeypatch, tmp_path)
    FakeNvml(monkeypatch, [FakeGpu(gpm=None)])  # e.g. an A100
    why = DcgmListener.available()
    assert not why and "no dcgmi on PATH" in why.reason and "Hopper" in why.reason


def test_runner_dcgm_gpm_json_lines(monkeypatch, tmp_path):
    _no_dcgmi(monkeypatch, tmp_path)
    FakeNvml(monkeypatch, [FakeGpu()])
    out = io.StringIO()
    assert runner.run("dcgmi", ListenerConfig(interval=0.01), out=out, count=2) == 0
    hello, *samples = (json.loads(x) for x in out.getvalue().splitlines())
    assert hello["tags"]["radtrack.listener.dcgm.backend"] == "gpm"
    assert len(samples) == 2
    assert samples[1]["v"]["dcgm/gpu0/sm_active_pct"] == pytest.approx(H100_GPM[2])

