"""Synthetic traces in benchmarks/power_sensor.py's format, from the documented sensor model
(radtrack/compute/sensor_model.py): a GPU whose true power follows the duty-cycled load
(with first-order ramps), seen by a sensor that averages 25 ms of every 100 ms."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from radtrack.compute.sensor_model import SensorModel, sense, square_wave

IDLE_W, BUSY_W = 120.0, 690.0
DT = 0.0005
# the load's period is a little off the nominal one, as a host loop's is: the sensor's
# phase against it drifts (a full turn in about 40 s at 20 ms)
DRIFT = 1.0005


def write_traces(out: Path, settings: list[tuple[float, float, float]], model: SensorModel | None = None,
                 calib_s: float = 8.0, rest_s: float = 3.0, windows: tuple[float, ...] = (0.5, 2.0, 8.0),
                 gpm: bool = True, rise_s: float = 0.0, fall_s: float = 0.0) -> dict:
    """Write counter/samples/gpm/bursts parquet files and phases.json to ``out`` for the
    given (period s, duty, seconds) settings; returns the phases.json content."""
    model = model or SensorModel(phase_s=0.013)
    t0 = 1_700_000_000.0
    pieces, phases, bursts = [], [], []
    active = []  # (t, 0/1): the load's on/off, what GPM counts
    clock = t0 + calib_s  # an idle settling phase first

    def add(name: str, period: float, duty: float, seconds: float) -> None:
        nonlocal clock
        t = np.arange(clock, clock + seconds, DT)
        if duty >= 1:
            p, on = np.full(len(t), BUSY_W), np.ones(len(t))
        elif duty <= 0:
            p, on = np.full(len(t), IDLE_W), np.zeros(len(t))
        else:
            real = period * DRIFT
            p = square_wave(t, real, duty, IDLE_W, BUSY_W, rise_s, fall_s, phase_s=clock)
            on = square_wave(t, real, duty, 0.0, 1.0, phase_s=clock)
            starts = np.arange(clock, clock + seconds, real)
            bursts.extend((name, s, duty * real, duty * real) for s in starts)
        active.append((t, on))
        if duty >= 1:
            bursts.append((name, clock, seconds, seconds))
        pieces.append((t, p))
        phases.append({"name": name, "start": clock, "end": clock + seconds, "period_s": period, "duty": duty})
        clock += seconds

    settle = np.arange(t0, clock, DT)
    pieces.append((settle, np.full(len(settle), IDLE_W)))
    active.append((settle, np.zeros(len(settle))))
    add("idle", 0.0, 0.0, calib_s)
    add("busy", 1.0, 1.0, calib_s)
    for period, duty, seconds in settings:
        rest = np.arange(clock, clock + rest_s, DT)
        pieces.append((rest, np.full(len(rest), IDLE_W)))
        active.append((rest, np.zeros(len(rest))))
        clock += rest_s
        add(f"p{round(period * 1000)}ms-d{round(duty * 100)}", period, duty, seconds)
    t = np.concatenate([x for x, _ in pieces])
    p = np.concatenate([y for _, y in pieces])
    order = np.argsort(t, kind="stable")
    t, p = t[order], p[order]
    on = np.concatenate([y for _, y in active])[np.argsort(np.concatenate([x for x, _ in active]), kind="stable")]
    sensed = sense(t, p, model, seed=3)
    reads = np.arange(t[0] + 0.2, t[-1], 0.005)
    idx = np.searchsorted(sensed.update_t, reads, side="right") - 1
    energy_mj = np.where(idx >= 0, sensed.counter_j[np.clip(idx, 0, None)], 0.0) * 1000 + 5e9
    pd.DataFrame({"t": reads, "energy_mj": energy_mj, "read_s": 0.001}).to_parquet(out / "counter.parquet")
    pd.DataFrame({"t_us": (sensed.sample_t * 1e6).astype(np.int64), "power_w": sensed.samples_w}).to_parquet(
        out / "samples.parquet")
    if gpm:
        gt = np.arange(t[0], t[-1], 0.1)
        cum = np.concatenate(([0.0], np.cumsum(on) * DT))
        busy = np.interp(gt, np.concatenate(([t[0]], t + DT)), cum)
        sm = np.concatenate(([0.0], np.diff(busy) / 0.1 * 100))
        pd.DataFrame({"t": gt, "gr_engine_active_pct": sm, "sm_active_pct": sm, "tensor_active_pct": 0.9 * sm,
                      "dram_active_pct": 0.3 * sm}).to_parquet(out / "gpm.parquet")
    else:
        pd.DataFrame(columns=["t", "gr_engine_active_pct", "sm_active_pct", "tensor_active_pct", "dram_active_pct"]).to_parquet(
            out / "gpm.parquet")
    pd.DataFrame(bursts, columns=["setting", "t", "busy_s", "host_s"]).to_parquet(out / "bursts.parquet")
    meta = {"gpm": gpm, "name": "synthetic H100", "driver": "model", "power_limit_w": 700.0,
            "phases": phases, "windows_s": list(windows), "quick": True, "date": "synthetic"}
    (out / "phases.json").write_text(json.dumps(meta))
    return meta
