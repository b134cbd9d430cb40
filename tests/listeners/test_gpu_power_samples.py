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


def _listen(seconds: float, resume: dict[str, int] | None = None) -> list[dict]:
    """smi at 0.1 s for ``seconds``, stopped as the launcher stops it (SIGTERM)."""
    argv = [sys.executable, "-m", "radtrack.listeners", "smi", "--devices", "0", "--interval", "0.1"]
    if resume:
        argv += ["--resume", json.dumps(resume)]
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
