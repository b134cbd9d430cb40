"""smi's driver power samples on a real GPU under a steady bf16 matmul: about 50 a second
on an H100, no gaps, their energy within 1 % of the hardware counter, and no sample
lost or repeated when the listener is stopped and started again with its position.

Skipped (visibly, by tests/conftest.py) without an NVIDIA GPU; run by the lead on an H100.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import pytest
from support import MATMUL, listener_lines

pytestmark = pytest.mark.gpu

KEY = "smi/gpu0/power_sample_w"


def _env() -> dict[str, str]:
    return {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@pytest.fixture(scope="module")
def steady_load():
    pytest.importorskip("torch")
    proc = subprocess.Popen([sys.executable, "-c", MATMUL], stdout=subprocess.PIPE, text=True,
                            env={**_env(), "CUDA_VISIBLE_DEVICES": "0"})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(3)  # clocks and power settle
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _listen(seconds: float, resume: dict[str, int] | None = None, since: float | None = None,
            hello: list[dict] | None = None) -> list[dict]:
    """smi at 0.1 s for ``seconds``, stopped as the launcher stops it (SIGTERM); its hello
    appended to ``hello``."""
    argv = [sys.executable, "-m", "radtrack.listeners", "smi", "--devices", "0", "--interval", "0.1"]
    if resume:
        argv += ["--resume", json.dumps(resume)]
    if since is not None:
        argv += ["--since", f"{since:.6f}"]
    # into files, not pipes: a pipe nobody reads fills in a few seconds (~9 KB/s of lines)
    # and blocks the listener, which the launcher's reader thread never lets happen
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        proc = subprocess.Popen(argv, stdout=fout, stderr=ferr, text=True, env=_env())
        time.sleep(seconds)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    lines = listener_lines(out)
    assert proc.returncode == 0 and lines and lines[0]["type"] == "hello", out[-2000:] + err[-2000:]
    assert KEY in {m["key"] for m in lines[0]["metrics"]}, lines[0]["tags"]
    if hello is not None:
        hello.append(lines[0])
    return lines[1:]


def _samples(lines: list[dict]) -> list[tuple[float, float]]:
    return [(x["t"], x["v"][KEY]) for x in lines if KEY in x["v"]]


def _energy(samples: list[tuple[float, float]], a: float, b: float) -> float:
    """Joules from the samples over [a, b] (trapezoids; each sample holds until the next)."""
    e = 0.0
    for (t0, w0), (t1, w1) in zip(samples, samples[1:], strict=False):
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            e += (hi - lo) * (w0 + w1) / 2
    return e


def test_driver_power_samples_under_steady_load(steady_load: int):
    wall0 = time.time()
    lines = _listen(20.0)
    wall1 = time.time()
    samples = _samples(lines)
    t = [s[0] for s in samples]
    assert t == sorted(t) and len(set(t)) == len(t), "samples out of order or repeated"
    assert wall0 - 3 <= t[0] and t[-1] <= wall1 + 1, "driver timestamps are not unix time"
    rate = (len(t) - 1) / (t[-1] - t[0])
    gaps = [b - a for a, b in zip(t, t[1:], strict=False)]
    median = statistics.median(gaps)
    print(f"samples/s {rate:.2f}, median gap {median * 1e3:.2f} ms, max gap {max(gaps) * 1e3:.2f} ms")
    assert 40 <= rate <= 60  # about 50 on an H100
    assert max(gaps) <= 3 * median, f"gap of {max(gaps):.3f} s, median {median:.4f} s"
    counter = [(x["t"], x["v"]["smi/gpu0/energy_j"]) for x in lines if "smi/gpu0/energy_j" in x["v"]]
    (ta, ea), (tb, eb) = counter[0], counter[-1]
    assert tb - ta > 15
    from_samples = _energy(samples, ta, tb)
    print(f"energy {ta:.3f}..{tb:.3f}: counter {eb - ea:.1f} J, samples {from_samples:.1f} J")
    assert from_samples == pytest.approx(eb - ea, rel=0.01)


def test_no_sample_lost_or_repeated_across_a_restart(steady_load: int):
    first = _listen(5.0)
    resume: dict[str, int] = {}
    for x in first:
        resume.update(x.get("resume", {}))
    assert KEY in resume
    second = _listen(5.0, resume)  # started at once: well within the ring's ~2.4 s
    a, b = _samples(first), _samples(second)
    t = [s[0] for s in a + b]
    assert t == sorted(t) and len(set(t)) == len(t)
    assert b[0][0] > a[-1][0]
    gaps = [y - x for x, y in zip(t, t[1:], strict=False)]
    median = statistics.median(gaps)
    join = b[0][0] - a[-1][0]
    print(f"gap at the restart {join * 1e3:.1f} ms, median {median * 1e3:.2f} ms")
    assert join <= 3 * median, "samples lost across the restart"


def test_energy_reaches_back_to_the_run_start(steady_load: int):
    """A listener started a second after the run (as the launcher starts it beside the
    script) counts the GPU's energy from the run's start: the part before its first
    counter reading recovered from the driver's power samples matches the hardware counter
    read independently at the start and at the end."""
    import pynvml

    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)  # CUDA_DEVICE_ORDER=PCI_BUS_ID: same GPU
        e_since, since = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
        time.sleep(1.0)  # the listener starts a second into the run
        hello: list[dict] = []
        lines = _listen(8.0, since=since, hello=hello)
        e_end, t_end = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
    finally:
        pynvml.nvmlShutdown()
    tags = hello[0]["tags"]
    prefix = "radtrack.listener.smi.gpu0"
    assert tags[f"{prefix}.energy_backfill_source"] == "driver power samples", tags
    recovered_s = float(tags[f"{prefix}.energy_backfill_s"])
    assert 1.0 < recovered_s < 2.4 and float(tags[f"{prefix}.energy_backfill_extrapolated_s"]) == 0
    counter = sorted((x["t"], x["v"]["smi/gpu0/energy_j"]) for x in lines if "smi/gpu0/energy_j" in x["v"])
    assert counter[0] == (pytest.approx(since, abs=1e-3), 0.0)
    samples = _samples(lines)
    assert samples[0][0] - since < 0.05  # the driver's samples from the run's start on
    (t_last, e_last) = counter[-1]
    mean_w = statistics.mean(w for _, w in samples[-25:])
    truth = (e_end - e_since) / 1000 - mean_w * (t_end - t_last)  # the counter at t_last
    print(f"recovered {recovered_s:.3f} s; energy from the start {e_last:.1f} J, counter {truth:.1f} J")
    # each counter read lags the energy by up to one update of the counter (tens of ms, ~70 J
    # at 700 W at each of the four reads: a 4-s window was 2.1 % off); over 9 s that is
    # about 1 %, while missing the recovered second would be 11 % (and counting it twice too)
    assert e_last == pytest.approx(truth, rel=0.02)
