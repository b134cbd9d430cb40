"""The GPU listeners against a real GPU running a CUDA matmul in a child process.

Skipped (visibly, by tests/conftest.py) without an NVIDIA GPU; run by the lead on an H100.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

import pytest
from support import MATMUL, listener_lines

pytestmark = pytest.mark.gpu
DRIVER_KEY = "smi/gpu0/power_sample_w"

def _env(without_dcgmi: bool = False) -> dict[str, str]:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if without_dcgmi:  # force the NVML GPM backend even where DCGM is installed
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if d and not os.path.exists(os.path.join(d, "dcgmi")))
    return env


def _listen(name: str, *args: str, without_dcgmi: bool = False) -> tuple[dict, list[dict], list[tuple]]:
    """hello, the paced readings, and the driver's own power samples (smi puts those on
    lines of their own, each with the driver's timestamp: (t, watts))."""
    proc = subprocess.run([sys.executable, "-m", "radtrack.listeners", name, "--devices", "0", *args],
                          capture_output=True, text=True, timeout=120, env=_env(without_dcgmi))
    lines = listener_lines(proc.stdout)
    assert proc.returncode == 0 and lines and lines[0]["type"] == "hello", proc.stdout + proc.stderr
    driver = [x for x in lines[1:] if x["v"] and all(k.endswith("/power_sample_w") for k in x["v"])]
    paced = [x["v"] for x in lines[1:] if not any(x is d for d in driver)]
    return lines[0], paced, [(x["t"], x["v"][DRIVER_KEY]) for x in driver]


@pytest.fixture(scope="module")
def idle_power_w() -> float:
    _, paced, driver = _listen("smi", "--interval", "0.1", "--count", "20")
    if driver:
        return statistics.median(w for _, w in driver)
    return statistics.median(s["smi/gpu0/power_w"] for s in paced)


@pytest.fixture(scope="module")
def matmul(idle_power_w: float):
    pytest.importorskip("torch")
    proc = subprocess.Popen([sys.executable, "-c", MATMUL], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_smi_under_load(matmul: int, idle_power_w: float):
    hello, samples, driver = _listen("smi", "--interval", "0.1", "--count", "60", "--pid", str(matmul))
    assert len(samples) == 60
    keys = {m["key"] for m in hello["metrics"]}
    assert {"smi/gpu0/power_w", "smi/gpu0/energy_j", "smi/gpu0/proc_mem_used_mib"} <= keys
    assert hello["tags"]["radtrack.listener.smi.gpu0.uuid"].startswith("GPU-")

    power = [s["smi/gpu0/power_w"] for s in samples if "smi/gpu0/power_w" in s]
    if DRIVER_KEY in keys:
        # the driver's buffer holds every power sample (~50/s on an H100, read once a
        # second): the instantaneous reading is then taken once a second only
        assert 5 <= len(power) <= 8, power
        watts = [w for _, w in driver]
        span = driver[-1][0] - driver[0][0]
        assert 40 <= (len(driver) - 1) / span <= 60, (len(driver), span)
        assert statistics.median(watts) > 1.5 * idle_power_w, (watts, idle_power_w)
        assert len(set(watts)) >= 50, watts  # a new reading each time
    else:
        assert statistics.median(power) > 1.5 * idle_power_w, (power, idle_power_w)
        # the H100 power reading refreshes every 100 ms: sampling at 0.1 s sees new values
        assert len(set(power)) >= 50, power

    # each reading at its own pace: utilisation every 0.2 s, the energy counter every 30 s
    # where the driver's power samples fill between (else every 5 s), PCIe every 5 s
    util_n = sum("smi/gpu0/gpu_util_pct" in s for s in samples)
    assert 25 <= util_n <= 35, util_n
    energy = [s["smi/gpu0/energy_j"] for s in samples if "smi/gpu0/energy_j" in s]
    if DRIVER_KEY in keys:
        assert len(energy) == 1 and energy[0] > -1e-9, energy
    else:
        assert len(energy) == 2 and energy[1] > energy[0] > -1e-9
        # 5 s of a loaded GPU: the counter moved by roughly mean power x time
        assert energy[1] - energy[0] > idle_power_w * 4.0
    pcie = sum("smi/gpu0/pcie_tx_bytes_per_s" in s for s in samples)
    assert pcie <= 2, pcie  # 6 s: a rate at 5 s (none at the first reading, right after the probe)

    proc_mem = [s.get("smi/gpu0/proc_mem_used_mib", 0.0) for s in samples]
    assert max(proc_mem) > 256, proc_mem  # two 128 MiB bf16 matrices and the CUDA context
    util = [s["smi/gpu0/proc_sm_util_pct"] for s in samples if "smi/gpu0/proc_sm_util_pct" in s]
    assert util and max(util) > 0


def test_dcgm_gpm_under_load(matmul: int):
    if not _gpm_supported():
        pytest.skip("this GPU has no NVML GPM (needs Hopper or newer)")
    hello, samples, _ = _listen("dcgm", "--interval", "0.1", "--count", "15", without_dcgmi=True)
    assert hello["tags"]["radtrack.listener.dcgm.backend"] == "gpm"
    active = [s["dcgm/gpu0/sm_active_pct"] for s in samples if "dcgm/gpu0/sm_active_pct" in s]
    assert len(active) >= 10 and statistics.median(active) > 10, active
    tensor = [s.get("dcgm/gpu0/tensor_active_pct", 0.0) for s in samples]
    assert max(tensor) > 0, tensor  # bf16 matmul runs on the tensor cores


def _gpm_supported() -> bool:
    import pynvml

    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return bool(pynvml.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
    except pynvml.NVMLError:
        return False
    finally:
        pynvml.nvmlShutdown()


def test_smi_available_on_a_gpu_host():
    from radtrack.listeners.smi import SmiListener

    assert SmiListener.available(), SmiListener.available().reason


def test_smi_and_dcgm_share_one_sampler_under_load(matmul: int):
    """smi at 0.1 s and dcgm (GPM) at 0.5 s in one process on the real GPU: each its own
    hello, keys and pace, both reading the matmul's load."""
    proc = subprocess.run([sys.executable, "-m", "radtrack.listeners", "smi+dcgm@0.5", "--devices", "0",
                           "--interval", "0.1", "--count", "10", "--pid", str(matmul)],
                          capture_output=True, text=True, timeout=120, env=_env(without_dcgmi=True))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = listener_lines(proc.stdout)
    hellos = {x["listener"]: x for x in lines if x["type"] == "hello"}
    assert hellos["smi"]["pid"] == hellos["dcgm"]["pid"]
    assert hellos["dcgm"]["tags"]["radtrack.listener.dcgm.backend"] == "gpm"
    assert hellos["smi"]["tags"]["radtrack.listener.smi.sampler"].startswith("shared: smi+dcgm")
    dcgm = [x for x in lines if x["type"] == "sample" and x["listener"] == "dcgm"]
    smi = [x for x in lines if x["type"] == "sample" and x["listener"] == "smi" and "smi/gpu0/sm_clock_mhz" in x["v"]]
    assert len(dcgm) == len(smi) == 10
    assert statistics.median(b["t"] - a["t"] for a, b in zip(dcgm, dcgm[1:], strict=False)) == pytest.approx(0.5, rel=0.1)
    assert statistics.median(b["t"] - a["t"] for a, b in zip(smi, smi[1:], strict=False)) == pytest.approx(0.1, rel=0.2)
    assert statistics.median(x["v"]["dcgm/gpu0/sm_active_pct"] for x in dcgm[1:]) > 20


def test_smi_energy_between_its_first_and_final_counter_reading(matmul: int):
    """4 s under load, stopped as the launcher stops it: the counter is read at the first and
    the final reading (whichever of NVML's two doors the probe chose, tag energy_source),
    and the energy between them is what the driver's power samples integrate to."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "radtrack.listeners", "smi", "--devices", "0",
                             "--interval", "0.1", "--pid", str(matmul)],
                            stdout=subprocess.PIPE, text=True, env=_env())
    time.sleep(4.0)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    lines = listener_lines(out)
    hello = lines[0]
    assert proc.returncode == 0 and hello["type"] == "hello", out[-2000:]
    assert hello["tags"]["radtrack.listener.smi.gpu0.energy_source"] in (
        "NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "nvmlDeviceGetTotalEnergyConsumption")
    energy = [(x["t"], x["v"]["smi/gpu0/energy_j"]) for x in lines[1:] if "smi/gpu0/energy_j" in x.get("v", {})]
    assert len(energy) >= 2, energy
    (t0, e0), (t1, e1) = energy[0], energy[-1]
    assert e1 > e0
    samples = [(x["t"], x["v"][DRIVER_KEY]) for x in lines[1:] if DRIVER_KEY in x.get("v", {})]
    inside = [(t, w) for t, w in samples if t0 <= t <= t1]
    if len(inside) < 50:
        pytest.skip("this GPU keeps no driver power samples")
    joules = sum((tb - ta) * (wa + wb) / 2 for (ta, wa), (tb, wb) in zip(inside, inside[1:], strict=False))
    covered = inside[-1][0] - inside[0][0]
    assert (e1 - e0) / (t1 - t0) == pytest.approx(joules / covered, rel=0.05)


def test_a_solo_gpu_reads_no_sm_shares_until_someone_else_arrives(matmul: int, monkeypatch):
    """On the real GPU: the launcher's word "GPU 0 is this row's alone" makes smi list the
    contexts only (the matmul's memory), never asking nvmlDeviceGetProcessUtilization after
    the probe; a second CUDA process outside the row's tree arrives, and from the next
    check on smi reads the SM shares, every process's included."""
    import time

    import pynvml

    from radtrack.listeners.base import ListenerConfig
    from radtrack.listeners.smi import SmiListener

    asked = []
    real = pynvml.nvmlDeviceGetProcessUtilization
    monkeypatch.setattr(pynvml, "nvmlDeviceGetProcessUtilization",
                        lambda *a: asked.append(time.monotonic()) or real(*a))
    monkeypatch.setenv("RADTRACK_SHARED_GPUS", "")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    smi = SmiListener(ListenerConfig(interval=0.1, devices=["0"], pid=matmul))
    smi.probe()
    assert smi.tags()["radtrack.listener.smi.gpu0.sharing"] == "solo"
    probe_calls = len(asked)

    def run(seconds: float) -> list[dict]:
        out, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            out.append(smi.sample())
            time.sleep(0.1)
        return out

    alone = run(6.0)
    assert len(asked) == probe_calls, "SM shares read on a GPU the row has to itself"
    mem = [s["smi/gpu0/proc_mem_used_mib"] for s in alone if "smi/gpu0/proc_mem_used_mib" in s]
    assert len(mem) >= 2 and max(mem) > 256, mem  # the contexts, every 5 s
    other = subprocess.Popen([sys.executable, "-c", MATMUL], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        shared = run(8.0)
    finally:
        other.kill()
        other.wait()
    assert len(asked) > probe_calls + 2, asked
    total = [s["smi/gpu0/all_procs_sm_util_pct"] for s in shared if "smi/gpu0/all_procs_sm_util_pct" in s]
    ours = [s["smi/gpu0/proc_sm_util_pct"] for s in shared if "smi/gpu0/proc_sm_util_pct" in s]
    # the first shared reading averages back to the previous check, when the run was alone
    # on the GPU (docs/metrics.md, "Reading paces"): it may say 100 %; over the 8 s the other
    # process takes its part, so the run's mean share is below the GPU's
    assert total and ours and sum(total) / len(total) > sum(ours) / len(ours) > 0, (total, ours)
