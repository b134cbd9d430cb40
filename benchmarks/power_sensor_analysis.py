"""Analysis of benchmarks/power_sensor.py's traces: pure (numpy/pandas), tested on the CPU
with synthetic traces from radtrack/compute/sensor_model.py (tests/analysis/test_energy_error.py).

From the raw traces it derives:

- the sensor: the counter's update period (median gap between its changes), the driver's
  sample period and how often consecutive samples differ, the effective averaging window
  (the boxcar width whose view of each setting's square wave best matches the spread of
  the counter's per-update readings and of the samples), the rise and fall times of the
  sampled power at the longest period;
- per setting and window length, over identical windows sliced from one run: the counter's
  mean power, spread (CV) and range; the samples'; the duty-cycle model idle + (busy -
  idle) x measured busy fraction; the activity model's estimate (radtrack/analysis/
  activity_power.py: fitted on the steady idle and busy phases, as is and scaled to the
  counter over the setting's whole run) with its spread and bias against the duty-cycle
  model; the 95 % interval radtrack/compute/energy_error.py gives the counter's figure and
  how many windows it covers;
- fitted sensor constants for ``RADTRACK_SENSOR_CONSTANTS``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SKIP_S = 1.0  # the first second of each setting's run is left out (the GPU settles)
TARGET = {"setting": "p20ms-d25", "window_s": 8.0, "spread_pct": 3.0, "bias_pct": 5.0}


def _pure(name: str) -> ModuleType:
    """radtrack/analysis/<name>.py loaded by path: radtrack.analysis's package imports
    MLflow, which a bare GPU host may not have; these modules import only numpy."""
    key = f"_radtrack_pure_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / "radtrack" / "compute" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[key] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


activity_power = _pure("activity_power")
energy_error = _pure("energy_error")


@dataclass
class Traces:
    counter: pd.DataFrame  # t (s), energy_j
    samples: pd.DataFrame  # t (s), power_w
    gpm: pd.DataFrame  # t (s), sm_active_pct, tensor_active_pct, dram_active_pct
    bursts: pd.DataFrame  # setting, t (s), busy_s
    meta: dict  # phases (name, start, end, period_s, duty), windows_s, name, driver, ...


def load_dir(out: Path) -> Traces:
    counter = pd.read_parquet(out / "counter.parquet")
    counter = pd.DataFrame({"t": counter["t"], "energy_j": counter["energy_mj"] / 1000.0})
    samples = pd.read_parquet(out / "samples.parquet")
    samples = pd.DataFrame({"t": samples["t_us"] / 1e6, "power_w": samples["power_w"]})
    return Traces(counter, samples, pd.read_parquet(out / "gpm.parquet"),
                  pd.read_parquet(out / "bursts.parquet"), json.loads((out / "phases.json").read_text()))


# -- the sensor ------------------------------------------------------------------------

def counter_updates(counter: pd.DataFrame) -> pd.DataFrame:
    """The counter's changes: time (midway between the reads around it) and the mean power
    since the change before (the sensor's reading as the counter integrated it)."""
    t = counter["t"].to_numpy()
    e = counter["energy_j"].to_numpy()
    moved = np.flatnonzero(np.diff(e) > 0) + 1
    tc = (t[moved] + t[moved - 1]) / 2
    return pd.DataFrame({"t": tc[1:], "power_w": np.diff(e[moved]) / np.diff(tc)})


def boxcar_std(period_s: float, duty: float, window_s: float, phases: int = 256) -> float:
    """Standard deviation (fraction of the swing) of a square wave's mean over a window of
    ``window_s`` at a uniformly random phase."""
    if window_s <= 0:
        return math.sqrt(duty * (1 - duty))
    phi = np.arange(phases) / phases * period_s

    def busy_until(x: np.ndarray) -> np.ndarray:  # busy time in [0, x)
        whole, rest = np.floor(x / period_s), np.mod(x, period_s)
        return whole * duty * period_s + np.minimum(rest, duty * period_s)

    frac = (busy_until(phi + window_s) - busy_until(phi)) / window_s
    return float(np.std(frac))


def fit_window(rows: list[tuple[float, float, float]]) -> float:
    """The boxcar width (s) whose random-phase spread best matches observed spreads:
    rows of (period, duty, observed std / swing). Biased where a load's period locks to the
    sensor's (the phase is then not random): a cross-check of :func:`edge_window`."""
    rows = [r for r in rows if r[2] > 0]
    if not rows:
        return float("nan")
    grid = np.geomspace(0.001, 1.0, 121)
    cost = [sum(math.log(max(boxcar_std(p, d, a), 1e-4) / obs) ** 2 for p, d, obs in rows) for a in grid]
    return float(grid[int(np.argmin(cost))])


def edge_window(readings: np.ndarray, edges: int, update_s: float, idle_w: float, busy_w: float) -> float:
    """The averaging window (s) from a slow square wave: a reading is between 10 % and 90 %
    of the swing only when its window straddles an edge (probability 0.8 x window / update
    period per edge; a power ramp adds to it, so this is an upper bound)."""
    if edges <= 0 or not len(readings):
        return float("nan")
    swing = busy_w - idle_w
    mid = np.sum((readings > idle_w + 0.1 * swing) & (readings < busy_w - 0.1 * swing))
    return float(update_s * mid / (0.8 * edges))


def edge_times(traces: Traces, setting: str, period_s: float) -> tuple[float, float]:
    """10-90 % rise and 90-10 % fall times (s) of the samples folded on the bursts."""
    b = traces.bursts[traces.bursts["setting"] == setting]
    s = traces.samples
    if b.empty or s.empty:
        return float("nan"), float("nan")
    starts, busy = b["t"].to_numpy(), float(b["busy_s"].median())
    idx = np.searchsorted(starts, s["t"].to_numpy(), side="right") - 1
    ok = idx >= 0
    lag = s["t"].to_numpy()[ok] - starts[idx[ok]]
    w = s["power_w"].to_numpy()[ok]
    keep = lag < period_s
    lag, w = lag[keep], w[keep]
    bins = np.arange(0, period_s + 0.02, 0.02)
    which = np.digitize(lag, bins) - 1
    prof = np.array([np.mean(w[which == k]) if np.any(which == k) else np.nan for k in range(len(bins) - 1)])
    mid = bins[:-1] + 0.01
    lo, hi = np.nanmin(prof), np.nanmax(prof)

    def crossing(x: np.ndarray, y: np.ndarray, level: float, rising: bool) -> float:
        hit = np.flatnonzero(y >= level) if rising else np.flatnonzero(y <= level)
        return float(x[hit[0]]) if len(hit) else float("nan")

    on = mid <= busy + 0.1
    rise = crossing(mid[on], prof[on], lo + 0.9 * (hi - lo), True) - crossing(mid[on], prof[on], lo + 0.1 * (hi - lo), True)
    off = mid >= busy
    fall = crossing(mid[off], prof[off], lo + 0.1 * (hi - lo), False) - crossing(mid[off], prof[off], lo + 0.9 * (hi - lo), False)
    return rise, fall


def burst_profile(traces: Traces, setting: str, period_s: float, bin_s: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """The sampled power folded on the bursts' starts: (bin start s, mean W)."""
    b = traces.bursts[traces.bursts["setting"] == setting]
    st, sw = traces.samples["t"].to_numpy(), traces.samples["power_w"].to_numpy()
    starts = b["t"].to_numpy()
    idx = np.searchsorted(starts, st, side="right") - 1
    ok = idx >= 0
    lag, w = st[ok] - starts[idx[ok]], sw[ok]
    keep = lag < period_s
    bins = np.arange(0.0, period_s, bin_s)
    which = np.digitize(lag[keep], bins) - 1
    prof = np.array([np.mean(w[keep][which == k]) if np.any(which == k) else np.nan for k in range(len(bins))])
    return bins, prof


def ramp_levels(bins: np.ndarray, prof: np.ndarray, long_busy_s: float, bin_s: float = 0.02):  # noqa: ANN201
    """(idle level between bursts, burst level for a burst of b seconds) from a long period's
    profile: a burst runs first at its start-up level (clocks boosted before the power
    limiter reacts), so a short burst's level is the profile's mean over its first b (the
    first bin, which holds the idle before the edge, left out)."""
    after = bins >= long_busy_s + 5 * bin_s
    idle_gap = float(np.nanmedian(prof[after])) if np.any(after) else float("nan")

    def level(b: float) -> float:
        sel = (bins >= bin_s) & (bins < bin_s + max(b, bin_s)) & (bins < long_busy_s)
        return float(np.nanmean(prof[sel])) if np.any(sel) else float("nan")

    return idle_gap, level


# -- windows ---------------------------------------------------------------------------

def _standing(t: np.ndarray, v: np.ndarray, x: float) -> float:
    i = int(np.searchsorted(t, x, side="right")) - 1
    return float(v[i]) if i >= 0 else float("nan")


def _busy_in(starts: np.ndarray, busy: np.ndarray, a: float, b: float) -> float:
    return float(np.sum(np.clip(np.minimum(starts + busy, b) - np.maximum(starts, a), 0.0, None)))


def _phase(meta: dict, name: str) -> dict:
    return next(p for p in meta["phases"] if p["name"] == name)


def analyse(traces: Traces, constants=None) -> dict:  # noqa: ANN001
    """Everything the module docstring lists, as one JSON-able dict; the intervals use
    ``constants`` (energy_error.SensorConstants; default: $RADTRACK_SENSOR_CONSTANTS, else
    the documented defaults)."""
    constants = constants or energy_error.load_constants()
    ct, ce = traces.counter["t"].to_numpy(), traces.counter["energy_j"].to_numpy()
    st, sw = traces.samples["t"].to_numpy(), traces.samples["power_w"].to_numpy()

    def counter_w(a: float, b: float) -> float:
        return (_standing(ct, ce, b) - _standing(ct, ce, a)) / (b - a)

    idle, busy = _phase(traces.meta, "idle"), _phase(traces.meta, "busy")
    idle_w = counter_w(idle["start"] + 1, idle["end"])
    busy_w = counter_w(busy["start"] + 1, busy["end"])
    ups = counter_updates(traces.counter)
    update_s = float(np.median(np.diff(ups["t"]))) if len(ups) > 2 else float("nan")
    sample_s = float(np.median(np.diff(st))) if len(st) > 2 else float("nan")
    changed = float(np.mean(np.diff(sw) != 0)) if len(sw) > 2 else float("nan")
    gpm_ok = bool(traces.meta.get("gpm", True)) and not traces.gpm.empty
    act = (activity_power.activity_trace(traces.gpm["t"], {c: traces.gpm[c] for c in traces.gpm.columns if c != "t"})
           if gpm_ok else None)
    # the interval's burstiness: the engine's busy time (temporal), else SM activity
    busy_col = next((c for c in ("gr_engine_active_pct", "sm_active_pct") if c in traces.gpm), None)
    gt = traces.gpm["t"].to_numpy()
    model = activity_power.fit(act, st, sw) if act is not None else None

    settings = [p for p in traces.meta["phases"] if p["name"] not in ("idle", "busy")]
    ew = [p for p in settings if p["duty"] < 1]
    longest = max(ew, key=lambda p: p["period_s"]) if ew else None
    idle_gap, burst_level = float("nan"), (lambda b: float("nan"))
    if longest is not None:
        lb = traces.bursts.loc[traces.bursts["setting"] == longest["name"], "busy_s"]
        idle_gap, burst_level = ramp_levels(*burst_profile(traces, longest["name"], longest["period_s"]),
                                            float(lb.median()) if len(lb) else 0.0)
    spreads_c, spreads_s = [], []
    rows = []
    for p in settings:
        name, period, duty = p["name"], p["period_s"], p["duty"]
        bs = traces.bursts[traces.bursts["setting"] == name]
        starts, busy_s = bs["t"].to_numpy(), bs["busy_s"].to_numpy()
        a0, b0 = p["start"] + SKIP_S, p["end"]
        in_run = (ups["t"] > a0) & (ups["t"] < b0)
        if in_run.sum() > 3:
            spreads_c.append((period, float(np.mean(busy_s) / period) if len(bs) else duty,
                              float(np.std(ups["power_w"][in_run])) / (busy_w - idle_w)))
        sm = (st > a0) & (st < b0)
        if sm.sum() > 3:
            spreads_s.append((period, float(np.mean(busy_s) / period) if len(bs) else duty,
                              float(np.std(sw[sm])) / (busy_w - idle_w)))
        level = burst_level(float(np.median(busy_s))) if len(busy_s) else float("nan")
        scaled = None
        if model is not None:
            b1 = min(b0, float(act.t[-1]))  # the GPM reads may stop just before the run's end
            scaled = activity_power.scaled(model, counter_w(a0, b1) * (b1 - a0), a0, b1, act, min_span_s=0.0)
        for length in traces.meta["windows_s"]:
            n = int((b0 - a0) // length)
            if n < 5:
                continue
            recs = []
            for i in range(n):
                a, b = a0 + i * length, a0 + (i + 1) * length
                f = _busy_in(starts, busy_s, a, b) / length
                ws = sw[(st >= a) & (st < b)]
                rec = {"busy_fraction": f, "duty_model_w": idle_w + (busy_w - idle_w) * f,
                       "ramp_model_w": idle_gap + (level - idle_gap) * f,
                       "counter_w": counter_w(a, b), "samples_w": float(np.mean(ws)) if len(ws) else np.nan}
                acts = None
                if gpm_ok and busy_col:
                    acts = traces.gpm[busy_col].to_numpy()[(gt > a) & (gt <= b + 1e-9)]
                if act is not None:
                    rec["model_w"] = activity_power.energy_between(model, act, a, b) / length if model else np.nan
                    rec["model_scaled_w"] = (activity_power.energy_between(scaled, act, a, b) / length
                                             if scaled else np.nan)
                swing = sum(model.slopes_w.values()) * 100 if model else None
                ci = energy_error.interval(length, ws, acts, swing, constants)
                rec["ci95_pct"], rec["flag"] = ci.ci95_pct, ci.reason
                recs.append(rec)
            w = pd.DataFrame(recs)
            rows.append(_row(name, period, duty, length, w))
    rise, fall = edge_times(traces, longest["name"], longest["period_s"]) if longest else (np.nan, np.nan)
    window_edges = float("nan")
    if longest is not None and longest["period_s"] >= 4 * update_s:
        a0, b0 = longest["start"] + SKIP_S, longest["end"]
        inside = ups[(ups["t"] > a0) & (ups["t"] < b0)]["power_w"].to_numpy()
        nb = int(((traces.bursts["setting"] == longest["name"]) & (traces.bursts["t"] > a0)).sum())
        window_edges = edge_window(inside, 2 * nb, update_s, idle_w, busy_w)
    sensor = {"gpu": traces.meta.get("name", ""), "driver": traces.meta.get("driver", ""),
              "date": traces.meta.get("date", ""), "idle_w": idle_w, "busy_w": busy_w,
              "counter_update_s": update_s, "sample_s": sample_s, "samples_changed_frac": changed,
              "avg_window_edges_s": window_edges,
              "avg_window_counter_s": fit_window(spreads_c), "avg_window_samples_s": fit_window(spreads_s),
              "rise_s": rise, "fall_s": fall, "gpm": gpm_ok, "idle_between_bursts_w": idle_gap,
              "burst_level_20ms_w": burst_level(0.02), "burst_level_long_w": burst_level(10.0),
              "power_limit_w": traces.meta.get("power_limit_w")}
    table = pd.DataFrame(rows)
    result = {"sensor": sensor, "table": json.loads(table.to_json(orient="records")),
              "model": ({"intercept_w": model.intercept_w, "slopes_w": dict(model.slopes_w),
                         "fitted_on": model.fitted_on, "points": model.points} if model else None),
              "constants": asdict(fitted_constants(sensor, table, constants)),
              "constants_used": asdict(constants), "target": target_check(table)}
    if not gpm_ok:
        result["note"] = ("GPM is not available on this GPU: no activity model; energy figures "
                          "fall back to the counter with its error bar")
    return result


def _row(name: str, period: float, duty: float, length: float, w: pd.DataFrame) -> dict:
    def cv(col: str) -> float:
        """Spread across the windows of each one's figure over its own duty-cycle model (%):
        windows shorter than a period hold different work, this compares like with like."""
        v = (w[col] / w["duty_model_w"]).dropna() if col in w else pd.Series(dtype=float)
        return float(v.std(ddof=1) / v.mean() * 100) if len(v) > 1 and v.mean() else float("nan")

    def bias(col: str, ref: str = "duty_model_w") -> float:
        return float((w[col] / w[ref] - 1).mean() * 100) if col in w else float("nan")

    ratio = w["counter_w"] / w["duty_model_w"]
    dev = (ratio - ratio.mean()).abs() / ratio.mean() * 100
    return {"setting": name, "period_ms": period * 1000, "duty": duty, "window_s": length, "windows": len(w),
            "busy_fraction": float(w["busy_fraction"].mean()),
            "duty_model_w": float(w["duty_model_w"].mean()),
            "counter_w": float(w["counter_w"].mean()), "counter_cv_pct": cv("counter_w"),
            "counter_min_w": float(w["counter_w"].min()), "counter_max_w": float(w["counter_w"].max()),
            "counter_bias_pct": bias("counter_w"),
            "ramp_model_w": float(w["ramp_model_w"].mean()),
            "counter_bias_ramp_pct": bias("counter_w", "ramp_model_w"),
            "samples_w": float(w["samples_w"].mean()), "samples_cv_pct": cv("samples_w"),
            "model_w": float(w["model_w"].mean()) if "model_w" in w else float("nan"),
            "model_cv_pct": cv("model_w"), "model_bias_pct": bias("model_w"),
            "model_bias_ramp_pct": bias("model_w", "ramp_model_w"),
            "model_scaled_w": float(w["model_scaled_w"].mean()) if "model_scaled_w" in w else float("nan"),
            "model_scaled_cv_pct": cv("model_scaled_w"), "model_scaled_bias_pct": bias("model_scaled_w"),
            "model_scaled_bias_ramp_pct": bias("model_scaled_w", "ramp_model_w"),
            "ci95_pct": float(w["ci95_pct"].median()),
            "ci_covers_frac": float((dev <= w["ci95_pct"]).mean()),
            "flagged_frac": float((w["flag"] != "").mean())}


def fitted_constants(sensor: dict, table: pd.DataFrame, used=None):  # noqa: ANN001, ANN201
    """The constants the table used (``used``) with this GPU's measured periods, and
    ``alias_corr_s`` scaled so the interval covers 90 % of the observed spreads (1.96 x
    spread) of the settings whose interval is over 1 %."""
    c = used or energy_error.SensorConstants()
    upd = sensor.get("counter_update_s")
    win = sensor.get("avg_window_edges_s")
    win = win if _ok(win) else sensor.get("avg_window_counter_s")
    smp = sensor.get("sample_s")
    c = replace(c, gpu=sensor.get("gpu") or c.gpu, driver=sensor.get("driver") or c.driver,
                source=f"benchmarks/power_sensor.py {sensor.get('date', '')}",
                update_s=upd if _ok(upd) else c.update_s,
                avg_window_s=min(win, upd) if _ok(win) and _ok(upd) else c.avg_window_s,
                sample_s=smp if _ok(smp) else c.sample_s)
    if _ok(sensor.get("busy_w")) and _ok(sensor.get("idle_w")):
        c = replace(c, swing_w=sensor["busy_w"] - sensor["idle_w"])
    if not table.empty:
        ratio = (1.96 * table["counter_cv_pct"] / table["ci95_pct"]).replace([np.inf, -np.inf], np.nan).dropna()
        ratio = ratio[table.loc[ratio.index, "ci95_pct"] > 1.0]
        if len(ratio):
            k = float(np.quantile(ratio, 0.9))
            c = replace(c, alias_corr_s=float(np.clip(c.alias_corr_s * k * k, 0.01, 30.0)))
    return c


def _ok(x: object) -> bool:
    return isinstance(x, float | int) and math.isfinite(x) and x > 0


def target_check(table: pd.DataFrame) -> dict:
    """Issue 30's target: at 20 ms / 25 %, 8-s windows, the model's spread <= 3 % and its
    bias against the duty-cycle model within 5 % (as is, and scaled)."""
    if table.empty:
        return {"met": False, "why": "no table"}
    row = table[(table["setting"] == TARGET["setting"]) & (table["window_s"] == TARGET["window_s"])]
    if row.empty:
        return {"met": False, "why": f"no {TARGET['setting']} row with {TARGET['window_s']:g}-s windows"}
    r = row.iloc[0]
    out = {**TARGET, "counter_cv_pct": r["counter_cv_pct"]}
    for col in ("model", "model_scaled"):
        out[col] = {"cv_pct": r[f"{col}_cv_pct"], "bias_pct": r[f"{col}_bias_pct"],
                    "met": bool(r[f"{col}_cv_pct"] <= TARGET["spread_pct"]
                                and abs(r[f"{col}_bias_pct"]) <= TARGET["bias_pct"])}
    out["met"] = out["model"]["met"] or out["model_scaled"]["met"]
    return out


# -- tables ----------------------------------------------------------------------------

def _fmt(v: object, digits: int = 1) -> str:
    if isinstance(v, float):
        return "n/a" if not math.isfinite(v) else f"{v:.{digits}f}"
    return str(v)


def markdown(result: dict) -> str:
    """The tables docs/analysis.md receives."""
    s = result["sensor"]
    lines = [f"Sensor: {s['gpu']}, driver {s['driver']}, {s['date']}; idle {_fmt(s['idle_w'])} W, "
             f"fully busy (bf16 matmul, steady) {_fmt(s['busy_w'])} W; at the longest period: "
             f"{_fmt(s['idle_between_bursts_w'])} W between bursts, {_fmt(s['burst_level_20ms_w'])} W in a "
             f"burst's first 20 ms, {_fmt(s['burst_level_long_w'])} W over a whole burst.", "",
             "| counter update period | driver sample period | samples that differ from the one before | "
             "averaging window (edges) | averaging window (counter fit) | averaging window (samples fit) | "
             "rise 10-90 % | fall 90-10 % |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |",
             f"| {_fmt(s['counter_update_s'] * 1000)} ms | {_fmt(s['sample_s'] * 1000)} ms | "
             f"{_fmt(s['samples_changed_frac'] * 100, 0)} % | {_fmt(s['avg_window_edges_s'] * 1000)} ms | "
             f"{_fmt(s['avg_window_counter_s'] * 1000)} ms | "
             f"{_fmt(s['avg_window_samples_s'] * 1000)} ms | {_fmt(s['rise_s'] * 1000, 0)} ms | "
             f"{_fmt(s['fall_s'] * 1000, 0)} ms |", "",
             "| period (duty) | window | n | busy fraction | duty-cycle model: steady, ramp | "
             "counter: mean, spread, min-max | samples: mean, spread | counter bias: steady, ramp | "
             "interval (median) | covers | activity model: mean, spread, bias steady, ramp | "
             "scaled: spread, bias steady, ramp |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["table"]:
        lines.append(
            f"| {_fmt(r['period_ms'], 0)} ms ({_fmt(r['duty'] * 100, 0)} %) | {_fmt(r['window_s'])} s | "
            f"{r['windows']} | {_fmt(r['busy_fraction'], 3)} | {_fmt(r['duty_model_w'])} W, "
            f"{_fmt(r['ramp_model_w'])} W | "
            f"{_fmt(r['counter_w'])} W, {_fmt(r['counter_cv_pct'])} %, {_fmt(r['counter_min_w'])}-"
            f"{_fmt(r['counter_max_w'])} W | {_fmt(r['samples_w'])} W, {_fmt(r['samples_cv_pct'])} % | "
            f"{_fmt(r['counter_bias_pct'])} %, {_fmt(r['counter_bias_ramp_pct'])} % | "
            f"±{_fmt(r['ci95_pct'])} % | {_fmt(r['ci_covers_frac'] * 100, 0)} % | "
            f"{_fmt(r['model_w'])} W, {_fmt(r['model_cv_pct'])} %, {_fmt(r['model_bias_pct'])} %, "
            f"{_fmt(r['model_bias_ramp_pct'])} % | {_fmt(r['model_scaled_cv_pct'])} %, "
            f"{_fmt(r['model_scaled_bias_pct'])} %, {_fmt(r['model_scaled_bias_ramp_pct'])} % |")
    t = result["target"]
    if "model" in t:
        lines += ["", f"Target ({t['setting']}, {t['window_s']:g}-s windows: spread <= {t['spread_pct']:g} %, "
                      f"within {t['bias_pct']:g} % of the duty-cycle model): counter CV {_fmt(t['counter_cv_pct'])} %; "
                      f"activity model CV {_fmt(t['model']['cv_pct'])} %, bias {_fmt(t['model']['bias_pct'])} %; "
                      f"scaled CV {_fmt(t['model_scaled']['cv_pct'])} %, bias {_fmt(t['model_scaled']['bias_pct'])} %: "
                      f"{'met' if t['met'] else 'not met'}."]
    if result.get("note"):
        lines += ["", result["note"]]
    return "\n".join(lines)


DOC_BEGIN = "<!-- power-sensor tables: begin (benchmarks/power_sensor.py --docs) -->"
DOC_END = "<!-- power-sensor tables: end -->"


def update_docs(doc: Path, result: dict, source: str) -> None:
    """Replace the block between :data:`DOC_BEGIN` and :data:`DOC_END` in ``doc`` with the
    result's tables and where they came from."""
    text = doc.read_text()
    if DOC_BEGIN not in text or DOC_END not in text:
        raise SystemExit(f"{doc}: no '{DOC_BEGIN}' ... '{DOC_END}' block to fill")
    head, rest = text.split(DOC_BEGIN, 1)
    _, tail = rest.split(DOC_END, 1)
    block = f"{DOC_BEGIN}\n{markdown(result)}\n\nTraces and tables: `{source}`.\n{DOC_END}"
    doc.write_text(head + block + tail)


def analyse_dir(out: Path) -> dict:
    """Analyse the traces in ``out`` and write power_sensor.json, power_sensor.md and
    sensor_constants.json there."""
    result = analyse(load_dir(out))
    (out / "power_sensor.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    (out / "power_sensor.md").write_text(markdown(result) + "\n")
    (out / "sensor_constants.json").write_text(json.dumps({"constants": result["constants"]}, indent=1) + "\n")
    return result
