"""How the GPU's power sensor sees a bursty load (issue 30): duty-cycled bf16 matmuls over a
grid of periods and duty cycles, with the energy counter, the driver's power samples and
NVML GPM activity read side by side.

    python benchmarks/power_sensor.py --out DIR [--quick] [--gpu 0]

One process runs the load: per setting (period, duty cycle), a burst of 4096x4096 bf16
matmuls at the start of every period, timed with CUDA events (the busy fraction is
measured, not assumed), then idle until the next period; first an idle and a fully busy
phase (the duty-cycle model's two levels). Another process reads, all the while:
``nvmlDeviceGetTotalEnergyConsumption`` as fast as it answers (the counter's update
period), ``nvmlDeviceGetSamples`` (power) every 0.5 s and GPM (SM active, tensor active,
DRAM active) every 0.1 s. Windows of three lengths are sliced from each setting's one long
run (5 or more of each), so the whole grid takes about 5 minutes (``--quick``: about 2).

Writes to DIR: ``counter.parquet``, ``samples.parquet``, ``gpm.parquet``,
``bursts.parquet``, ``phases.json`` (the raw traces and the settings), then
``power_sensor.json`` (the tables, the sensor's fitted constants, the activity model's
evaluation) and ``power_sensor.md`` (the same as Markdown tables for docs/analysis.md)
through benchmarks/power_sensor_analysis.py; ``sensor_constants.json`` is ready for
``RADTRACK_SENSOR_CONSTANTS``. Re-analyse stored traces with ``--analyse-only``;
``--docs docs/analysis.md`` writes the tables into its power-sensor block.

It never changes a GPU setting (clocks, power limit, persistence, MIG): it only reads NVML
and runs matmuls. Needs torch, pynvml, numpy, pandas and pyarrow; not MLflow (the pure
modules it uses are loaded by path).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import power_sensor_analysis  # noqa: E402

MATMUL_N = 4096
GPM_EVERY_S = 0.1
SAMPLES_EVERY_S = 0.5
REST_S = 3.0
JITTER_S = 0.1
COUNTER_EVERY_S = 0.002  # fast enough to time a 20-100 ms update, small enough to store
# NVML_GPM_METRIC_*: GRAPHICS_UTIL (time the engine was busy), SM_UTIL, ANY_TENSOR_UTIL, DRAM_BW_UTIL
GPM_COLUMNS = {"gr_engine_active_pct": 1, "sm_active_pct": 2, "tensor_active_pct": 5, "dram_active_pct": 10}  # idle between settings, so one setting's tail is not the next one's start


@dataclass(frozen=True)
class Setting:
    name: str
    period_s: float
    duty: float
    seconds: float


def plan(quick: bool) -> tuple[list[Setting], list[float], float]:
    """(settings, window lengths, seconds of each calibration phase). Every window length
    L is used where a setting's run holds >= 5 windows of it."""
    windows = [0.5, 2.0, 8.0]
    if quick:
        grid = [(0.005, 0.25, 17), (0.02, 0.25, 41), (0.1, 0.25, 11), (1.0, 0.25, 11)]
        calib = 5.0
    else:
        grid = [(0.005, 0.25, 41), (0.02, 0.25, 41), (0.05, 0.25, 25), (0.1, 0.25, 41),
                (0.5, 0.25, 25), (2.0, 0.25, 41), (0.02, 0.5, 25), (0.1, 0.5, 17)]
        calib = 8.0
    settings = [Setting(f"p{round(p * 1000)}ms-d{round(d * 100)}", p, d, s) for p, d, s in grid]
    return settings, windows, calib


# -- the sampler (its own process: the load's host loop must not share its GIL) ---------

def sampler(out: str, gpu: int, stop: mp.synchronize.Event, ready: mp.synchronize.Event) -> None:
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(gpu)
    counter: list[tuple[float, float, float]] = []
    samples: dict[int, float] = {}
    gpm: list[tuple[float, ...]] = []
    gpm_ok = _gpm_supported(pynvml, h)
    pair = [pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()] if gpm_ok else []
    if gpm_ok:
        pynvml.nvmlGpmSampleGet(h, pair[0])
    last_us = 0
    try:
        _, got = pynvml.nvmlDeviceGetSamples(h, 0, 0)
        last_us = max((int(s.timeStamp) for s in got), default=0)
    except pynvml.NVMLError:
        pass
    next_gpm = next_samples = time.time()
    ready.set()
    while not stop.is_set():
        t0 = time.time()
        e = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        t1 = time.time()
        counter.append(((t0 + t1) / 2, float(e), t1 - t0))
        pause = t0 + COUNTER_EVERY_S - time.time()
        if pause > 0:
            time.sleep(pause)
        if t1 >= next_samples:
            next_samples += SAMPLES_EVERY_S
            try:
                vtype, got = pynvml.nvmlDeviceGetSamples(h, 0, last_us)
                member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[vtype]
                for s in got:
                    samples[int(s.timeStamp)] = float(getattr(s.sampleValue, member)) / 1000.0
                last_us = max(samples, default=last_us)
            except pynvml.NVMLError_NotFound:
                pass
        if gpm_ok and t1 >= next_gpm:
            next_gpm += GPM_EVERY_S
            gpm.append(_gpm_read(pynvml, h, pair))
            pair.reverse()
    out_dir = Path(out)
    pd.DataFrame(counter, columns=["t", "energy_mj", "read_s"]).to_parquet(out_dir / "counter.parquet")
    pd.DataFrame(sorted(samples.items()), columns=["t_us", "power_w"]).to_parquet(out_dir / "samples.parquet")
    pd.DataFrame(gpm, columns=["t", *GPM_COLUMNS]).to_parquet(
        out_dir / "gpm.parquet")
    (out_dir / "sampler.json").write_text(json.dumps({
        "gpm": gpm_ok, "name": pynvml.nvmlDeviceGetName(h),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0}))
    pynvml.nvmlShutdown()


def _gpm_supported(pynvml, h) -> bool:  # noqa: ANN001
    try:
        return bool(pynvml.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
    except (pynvml.NVMLError, AttributeError):
        return False


def _gpm_read(pynvml, h, pair) -> tuple[float, ...]:  # noqa: ANN001
    """One GPM read: the metrics between the previous sample and one taken now."""
    pynvml.nvmlGpmSampleGet(h, pair[1])
    t = time.time()
    req = pynvml.c_nvmlGpmMetricsGet_t()
    req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    req.numMetrics = len(GPM_COLUMNS)
    req.sample1, req.sample2 = pair[0], pair[1]
    for i, metric in enumerate(GPM_COLUMNS.values()):
        req.metrics[i].metricId = metric
    got = pynvml.nvmlGpmMetricsGet(req)
    vals = [float(got.metrics[i].value) if got.metrics[i].nvmlReturn == 0 else float("nan")
            for i in range(len(GPM_COLUMNS))]
    return (t, *vals)


# -- the load --------------------------------------------------------------------------

class Load:
    def __init__(self, gpu: int):
        import torch

        self.torch = torch
        self.dev = torch.device(f"cuda:{gpu}")
        torch.cuda.set_device(self.dev)
        g = torch.Generator(device=self.dev).manual_seed(0)
        self.a = torch.randn(MATMUL_N, MATMUL_N, device=self.dev, dtype=torch.bfloat16, generator=g)
        self.b = torch.randn(MATMUL_N, MATMUL_N, device=self.dev, dtype=torch.bfloat16, generator=g)
        self.c = torch.empty_like(self.a)
        self.bursts: list[tuple[str, float, float, float]] = []
        self.per_mm_s = self._time_one()

    def _burst(self, n: int) -> tuple[float, float]:
        """(host start time, GPU busy seconds by CUDA events) of n matmuls, waited for."""
        ev0 = self.torch.cuda.Event(enable_timing=True)
        ev1 = self.torch.cuda.Event(enable_timing=True)
        t = time.time()
        ev0.record()
        for _ in range(n):
            self.torch.mm(self.a, self.b, out=self.c)
        ev1.record()
        ev1.synchronize()
        return t, ev0.elapsed_time(ev1) / 1000.0

    def _time_one(self) -> float:
        self._burst(50)
        _, busy = self._burst(200)
        return busy / 200

    def run(self, name: str, period_s: float, duty: float, seconds: float) -> tuple[float, float]:
        """The duty-cycled load for ``seconds``; returns its (start, end) wall time."""
        n = max(1, round(duty * period_s / self.per_mm_s))
        # slow loads start each burst at a random point of a sensor update (0.1 s), so the
        # edges fall at every phase of the sensor's window (what measures that window);
        # fast ones keep their exact period, which is what aliases
        jitter = JITTER_S if period_s >= 5 * JITTER_S and duty < 1 else 0.0
        rng = np.random.default_rng(7)
        start = time.time()
        due = start
        while due < start + seconds:
            if jitter:
                _wait_until(due + rng.uniform(0.0, jitter))
            t, busy = self._burst(n)
            self.bursts.append((name, t, busy, time.time() - t))
            # a burst runs long when the clocks sag (power cap, heat): adapt, keep the duty
            if busy > 0:
                n = max(1, round(n * (duty * period_s / busy) ** 0.5)) if duty < 1 else n
            due += period_s
            _wait_until(due)
            if time.time() > due + period_s:  # fell behind: restart the grid, never catch up
                due = time.time()
        return start, time.time()


def _wait_until(t: float) -> None:
    left = t - time.time()
    if left > 0.003:
        time.sleep(left - 0.002)
    while time.time() < t:
        pass


def measure(out: Path, gpu: int, quick: bool,
            grid: tuple[list[Setting], list[float], float] | None = None) -> None:
    """Run the load and the sampler, write the raw traces and phases.json to ``out``;
    ``grid`` replaces :func:`plan`'s (settings, window lengths, calibration seconds)."""
    settings, windows, calib = grid or plan(quick)
    ctx = mp.get_context("spawn")
    stop, ready = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=sampler, args=(str(out), gpu, stop, ready))
    proc.start()
    if not ready.wait(60):
        proc.terminate()
        raise SystemExit("power_sensor: the NVML sampler did not start within 60 s")
    load = Load(gpu)
    phases: list[dict[str, object]] = []
    try:
        time.sleep(calib)  # the GPU settles to idle after the set-up
        t0 = time.time()
        time.sleep(calib)
        phases.append({"name": "idle", "start": t0, "end": time.time(), "period_s": 0.0, "duty": 0.0})
        a, b = load.run("busy", 1.0, 1.0, calib)
        phases.append({"name": "busy", "start": a, "end": b, "period_s": 1.0, "duty": 1.0})
        for s in settings:
            time.sleep(REST_S)
            a, b = load.run(s.name, s.period_s, s.duty, s.seconds)
            phases.append({**asdict(s), "start": a, "end": b})
            print(f"{s.name}: {b - a:.1f} s", flush=True)
    finally:
        stop.set()
        proc.join(120)
    pd.DataFrame(load.bursts, columns=["setting", "t", "busy_s", "host_s"]).to_parquet(out / "bursts.parquet")
    meta = json.loads((out / "sampler.json").read_text())
    meta.update(phases=phases, windows_s=windows, quick=quick, matmul_n=MATMUL_N,
                matmul_s=load.per_mm_s, date=time.strftime("%Y-%m-%d", time.gmtime()))
    (out / "phases.json").write_text(json.dumps(meta, indent=1))
    (out / "sampler.json").unlink()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="directory for the traces and tables")
    p.add_argument("--quick", action="store_true", help="4 periods, about 2 minutes")
    p.add_argument("--gpu", type=int, default=0, help="NVML/CUDA index of the GPU")
    p.add_argument("--analyse-only", action="store_true", help="re-analyse the traces in --out")
    p.add_argument("--docs", type=Path, metavar="FILE", help="write the tables into FILE's power-sensor "
                   "block (docs/analysis.md)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.analyse_only:
        measure(args.out, args.gpu, args.quick)
    result = power_sensor_analysis.analyse_dir(args.out)
    print(power_sensor_analysis.markdown(result))
    if args.docs is not None:
        power_sensor_analysis.update_docs(args.docs, result, str(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
