"""Issue 51's figures from what benchmarks/attribution_gpu.sh brought back (no GPU needed).

    python benchmarks/attribution_analysis.py RESULTS_DIR [--store DIR] [--seed 1]

RESULTS_DIR holds ``store.tar.xz`` (unpacked into a temporary folder unless ``--store``
names one already unpacked) and ``counter.csv`` (benchmarks/counter_reader.py). Writes
into RESULTS_DIR:

- ``splits.csv``: per co-located run, its attributed energy by the split the launcher used
  (re-accounted from the stored traces with radtrack/compute/attribution.py) and by
  ``solo-model`` (radtrack/compute/split_model.py), its work, J per unit against its solo
  runs' for both, the twins' gap and each run's share of the pair;
- ``coverage.csv``: per window (1 to 60 s, cut at random from every run's span), the GPU
  energy radtrack reports for it (``cumulative_energy`` over the run's stored smi traces),
  its 95 % interval (radtrack/compute/energy_figures.py ``GpuEnergy.interval``), the
  reference (the independent 20-Hz counter read at the window's edges, interpolated
  between its 100-ms updates) and whether the interval holds it;
- ``summary.json``: the figures the README and docs/analysis.md quote.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")


def _unpack(results: Path, store: str | None) -> Path:
    if store:
        return Path(store)
    where = Path(tempfile.mkdtemp(prefix="attribution-store-"))
    with tarfile.open(results / "store.tar.xz") as tar:
        tar.extractall(where, filter="data")
    return where


def _link_artifacts(where: Path, runs: pd.DataFrame) -> None:
    """The store names its artifacts under the device's temporary folder: point it here."""
    for uri in runs["artifact_uri"].dropna().unique():
        path = str(uri).removeprefix("file://")
        root = Path(path.split("/mlartifacts/")[0])
        if not root.exists():
            root.parent.mkdir(parents=True, exist_ok=True)
            root.symlink_to(where)


def _frames(run: pd.Series, uri: str) -> dict[str, pd.DataFrame]:
    from radtrack.analysis.data import read_telemetry
    from radtrack.analysis.trace_listing import telemetry_listeners

    have = telemetry_listeners(str(run["run_id"]), tracking_uri=uri, status=run.get("status"),
                               artifact_uri=run.get("artifact_uri"))
    return {n: read_telemetry(str(run["run_id"]), n, tracking_uri=uri) for n in have if n in ("smi", "dcgm")}


def _span(run: pd.Series) -> tuple[float, float]:
    return pd.Timestamp(run["start_time"]).timestamp(), pd.Timestamp(run["end_time"]).timestamp()


def _logged(client, run_id: str, metric: str) -> tuple[float, float, float]:  # noqa: ANN001
    """(start, end, mean) of the span over which the run logged ``metric``: from one block
    before its first log (the first block's work) to its last; NaNs without two logs."""
    history = sorted(client.get_metric_history(run_id, metric), key=lambda m: m.timestamp)
    if len(history) < 2:
        return float("nan"), float("nan"), float("nan")
    t = np.array([m.timestamp / 1000.0 for m in history])
    return float(t[0] - (t[1] - t[0])), float(t[-1]), float(np.mean([m.value for m in history]))


def _between(acc, run: str, a: float, b: float) -> float:  # noqa: ANN001
    """A run's attributed energy over [a, b] from an account's windows (prorated)."""
    lo, hi = np.maximum(acc.edges[:-1], a), np.minimum(acc.edges[1:], b)
    return float((acc.energy[run].to_numpy() * np.clip(hi - lo, 0.0, None) / np.diff(acc.edges)).sum())


def _solo_logged_jpu(client, runs: pd.DataFrame, frames: dict, ids: list[str], metric: str) -> float:  # noqa: ANN001
    """Mean J per unit of the solo runs ``ids`` over the spans where they logged ``metric``."""
    from radtrack.compute.device_energy import cumulative_energy
    from radtrack.compute.gpu_uses import run_uses

    out = []
    for rid in ids:
        run = runs[runs["run_id"] == rid].iloc[0]
        a, b, mean = _logged(client, rid, metric)
        tags = {k[4:]: v for k, v in run.items() if isinstance(k, str) and k.startswith("tag.") and isinstance(v, str)}
        use = next(iter(run_uses(rid, frames[rid], tags, run.get("collocation"), *_span(run)).values()), None)
        if use is None or not np.isfinite(a):
            continue
        out.append(float(np.diff(cumulative_energy(use, np.array([a, b])))[0]) / (mean * (b - a)))
    return float(np.nanmean(out)) if out else float("nan")


def splits(runs: pd.DataFrame, summary: pd.DataFrame, frames: dict, uri: str) -> pd.DataFrame:
    from mlflow import MlflowClient

    from radtrack.compute import split_model
    from radtrack.compute.attribution import account
    from radtrack.compute.gpu_uses import run_uses
    from radtrack.compute.interference import interference

    client = MlflowClient(uri)
    inter = interference(runs, summary)
    q = split_model.rates(inter)
    cv = split_model.solo_spread(inter, summary)
    rows = []
    for workload, group in runs[runs["collocation"].notna()].groupby("workload"):
        group = group[group["run_id"].isin(inter["run_id"])]
        if len(group) < 2:
            continue
        uses, spans = [], {}
        for _, run in group.iterrows():
            tags = {k[4:]: v for k, v in run.items() if isinstance(k, str) and k.startswith("tag.")
                    and isinstance(v, str)}
            spans[run["run_id"]] = _span(run)
            uses += list(run_uses(str(run["run_id"]), frames[run["run_id"]], tags,
                                  run.get("collocation"), *spans[run["run_id"]]).values())
        accounts = account(uses, min(s[0] for s in spans.values()), max(s[1] for s in spans.values()))
        for acc in accounts.values():
            model = split_model.resplit(acc, q, spans)
            for run_id in spans:
                me = inter[inter["run_id"] == run_id].iloc[0]
                work = float(me["throughput"]) * float(me["duration_s"]) if me["work_unit"] != "run" else float("nan")
                row = {"workload": int(workload), "letter": me["letter"], "file": Path(str(me["file"])).name,
                       "collocation": me["collocation"], "method": acc.method,
                       "energy_j": acc.energy_j(run_id), "model_energy_j": model.energy_j(run_id),
                       "model_method": model.method, "work": work, "work_unit": me["work_unit"],
                       "solo_j_per_unit": me["solo_energy_per_unit_j"], "solo_cv_pct": cv.get(run_id, (np.nan, 0))[0],
                       "gpu_energy_j": acc.gpu_energy_j}
                row["vs_solo_pct"] = 100 * (row["energy_j"] / work / row["solo_j_per_unit"] - 1)
                row["model_vs_solo_pct"] = 100 * (row["model_energy_j"] / work / row["solo_j_per_unit"] - 1)
                bound, assumed = split_model.split_bound(model.method, run_id, model, cv)
                row["model_split_ci95_pct"], row["model_split_assumed"] = bound, assumed
                change = split_model.serial_change_pct(model, q, spans)
                row["serial_change_pct"] = change
                row["model_bound_ci95_pct"] = math.hypot(bound, change) if math.isfinite(change) else bound
                # issue 51 item 4: work and energy over the span where throughput was logged
                # (start-up before the first block is neither), for the run and its solo runs
                basis = me.get("slowdown_basis")
                if isinstance(basis, str) and basis.startswith("throughput"):
                    a, b, mean = _logged(client, run_id, basis)
                    ids = [i for i in str(me.get("solo_run_ids") or "").split(",") if i]
                    solo = _solo_logged_jpu(client, runs, frames, ids, basis)
                    row["logged_s"] = b - a
                    row["logged_vs_solo_pct"] = 100 * (_between(acc, run_id, a, b) / (mean * (b - a)) / solo - 1)
                    row["model_logged_vs_solo_pct"] = 100 * (_between(model, run_id, a, b) / (mean * (b - a)) / solo - 1)
                row["fallback_split_ci95_pct"] = split_model.split_bound(acc.method, run_id, acc, cv)[0]
                rows.append(row)
    out = pd.DataFrame(rows)
    for col, name in (("energy_j", "share_pct"), ("model_energy_j", "model_share_pct"), ("work", "work_share_pct")):
        out[name] = 100 * out[col] / out.groupby("workload")[col].transform("sum")
    return out


def coverage(runs: pd.DataFrame, frames: dict, counter: pd.DataFrame, rng: np.random.Generator,
             constants_text: str = "{}", per_run: int = 12) -> pd.DataFrame:
    from radtrack.compute.device_energy import cumulative_energy
    from radtrack.compute.energy_error import load_constants
    from radtrack.compute.energy_figures import gpu_energies
    from radtrack.compute.gpu_uses import run_uses

    constants = load_constants(constants_text)
    moved = counter["energy_j"].diff().fillna(1) != 0  # the counter's own 100-ms updates
    tc, ec = counter.loc[moved, "time"].to_numpy(), counter.loc[moved, "energy_j"].to_numpy()
    rows = []
    for _, run in runs.iterrows():
        gpu = next(iter(gpu_energies(frames[run["run_id"]])), None)
        tags = {k[4:]: v for k, v in run.items() if isinstance(k, str) and k.startswith("tag.") and isinstance(v, str)}
        use = next(iter(run_uses(str(run["run_id"]), frames[run["run_id"]], tags, run.get("collocation"),
                                 *_span(run)).values()), None)
        if gpu is None or use is None or len(gpu.counter[0]) < 2:
            continue
        lo, hi = float(gpu.counter[0][0]), float(gpu.counter[0][-1])
        if hi - lo < 1.0:
            continue
        kind = "bursty" if "matmul_loop" in str(run["file"]) else (
            "co-located" if isinstance(run.get("collocation"), str) and run["workload"] in runs.loc[
                runs["workload"].duplicated(keep=False), "workload"].to_numpy() else "steady")
        for _ in range(per_run):
            width = float(np.exp(rng.uniform(math.log(1.0), math.log(min(60.0, hi - lo)))))
            a = float(rng.uniform(lo, hi - width))
            b = a + width
            est = np.diff(cumulative_energy(use, np.array([a, b])))[0]
            ref = float(np.interp(b, tc, ec) - np.interp(a, tc, ec))
            ci = gpu.interval(a, b, constants)
            err = 100 * (est / ref - 1)
            rows.append({"workload": run["workload"], "letter": run["letter"], "file": Path(str(run["file"])).name,
                         "load": kind, "window_s": width, "energy_j": est, "reference_j": ref, "error_pct": err,
                         "ci95_pct": ci.ci95_pct, "flag": ci.reason, "covered": abs(err) <= ci.ci95_pct})
    return pd.DataFrame(rows)


def bursty_coverage(sensor: Path, rng: np.random.Generator, constants_text: str = "{}",
                    per_setting: int = 40, listener_s: float = 1.0) -> pd.DataFrame:
    """Windows of 1-40 s cut at random from benchmarks/power_sensor.py's duty-cycled settings
    (bursts at the start of every period): the energy radtrack would report (the counter read
    every ``listener_s`` as the smi listener does, shaped by the driver's 20-ms power samples:
    ``cumulative_energy``), its 95 % interval (``energy_error.interval`` over the window's power
    samples and GPM SM activity), and the reference: the mean of the counter's energy over
    every identical window of the setting (the same window shifted by whole periods), which
    averages out whatever phase the sensor caught in any one of them (issue 51)."""
    from types import SimpleNamespace

    from radtrack.compute.device_energy import cumulative_energy
    from radtrack.compute.energy_error import interval, load_constants, reading_error_j

    constants = load_constants(constants_text)
    meta = json.loads((sensor / "phases.json").read_text())
    counter = pd.read_parquet(sensor / "counter.parquet")
    moved = counter["energy_mj"].diff().fillna(1) != 0
    tc, ec = counter.loc[moved, "t"].to_numpy(), counter.loc[moved, "energy_mj"].to_numpy() / 1000.0
    samples = pd.read_parquet(sensor / "samples.parquet")
    tp, pw = samples["t_us"].to_numpy() / 1e6, samples["power_w"].to_numpy()
    gpm = pd.read_parquet(sensor / "gpm.parquet")
    rows = []
    for phase in meta["phases"]:
        period = float(phase.get("period_s") or 0.0)
        if not 0 < period < 1.5 or phase["name"] == "busy":
            continue
        lo, hi = float(phase["start"]), float(phase["end"])
        # the listener's view: the counter every listener_s, the driver's samples between
        grid = np.arange(lo, hi + 1e-9, listener_s)
        grid_w = np.interp(grid, tp, pw)  # the power at each reading: how stale one can be
        use = SimpleNamespace(readings={"energy_j": (grid, np.interp(grid, tc, ec)),
                                        "power_w": (tp[(tp >= lo) & (tp <= hi)], pw[(tp >= lo) & (tp <= hi)])})
        for _ in range(per_setting):
            width = float(np.exp(rng.uniform(0.0, math.log(min(40.0, (hi - lo) / 2)))))
            a = float(rng.uniform(lo, hi - width))
            shifts = np.arange(-np.floor((a - lo) / period), np.floor((hi - width - a) / period) + 1) * period
            ref = float(np.mean(np.interp(a + width + shifts, tc, ec) - np.interp(a + shifts, tc, ec)))
            est = float(np.diff(cumulative_energy(use, np.array([a, a + width])))[0])
            inside = (tp >= a) & (tp <= a + width)
            act = gpm[(gpm["t"] >= a) & (gpm["t"] <= a + width)]["sm_active_pct"].to_numpy()
            stale = reading_error_j(a, a + width, grid, grid_w, constants.update_s)
            ci = interval(width, pw[inside], act if len(act) else None, constants=constants, readings_j=stale)
            err = 100 * (est / ref - 1)
            rows.append({"setting": phase["name"], "period_s": period, "window_s": width,
                         "identical_windows": len(shifts), "energy_j": est, "reference_j": ref,
                         "error_pct": err, "ci95_pct": ci.ci95_pct, "flag": ci.reason,
                         "covered": abs(err) <= ci.ci95_pct, "load": "bursty"})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--store")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--experiment", default="att")
    parser.add_argument("--gpu", help="the sensor constants of this GPU model (energy_error.for_gpu, e.g. "
                                      "'NVIDIA H200'); default: the H100's, or sensor_constants.json there")
    parser.add_argument("--recheck", type=int, metavar="PER_RUN",
                        help="only coverage.csv's windows again (PER_RUN a run, as recorded) under the "
                             "interval as it is now: coverage_recheck.csv, before and after per band")
    args = parser.parse_args(argv)
    from radtrack.analysis.data import load_runs
    from radtrack.analysis.run_summaries import summarize_runs

    results = Path(args.results)
    where = _unpack(results, args.store)
    uri = f"sqlite:///{where / 'mlflow.db'}"
    runs = load_runs(args.experiment, tracking_uri=uri)
    _link_artifacts(where, runs)
    frames = {r["run_id"]: _frames(r, uri) for _, r in runs.iterrows()}
    if args.recheck:
        return _recheck(results, runs, frames, args.seed, args.recheck, _constants(args.gpu))
    summary = summarize_runs(runs, uri, quantiles=False)
    table = splits(runs, summary, frames, uri)
    table.round(3).to_csv(results / "splits.csv", index=False)
    counter = pd.read_csv(results / "counter.csv")
    cov = coverage(runs, frames, counter, np.random.default_rng(args.seed))
    cov.round(4).to_csv(results / "coverage.csv", index=False)
    summary_out = {"default_constants": _coverage_summary(cov)}
    tuned = results / "sensor_constants.json"
    if tuned.is_file():  # the same windows (same seed) under the GPU's own constants
        cov = coverage(runs, frames, counter, np.random.default_rng(args.seed), str(tuned))
        cov.round(4).to_csv(results / "coverage_tuned.csv", index=False)
        summary_out["tuned_constants"] = _coverage_summary(cov)
    pd.set_option("display.width", 250)
    print(table[["workload", "letter", "file", "collocation", "method", "energy_j", "model_energy_j", "work_share_pct",
                 "share_pct", "model_share_pct", "vs_solo_pct", "model_vs_solo_pct", "model_split_ci95_pct"]]
          .round(2).to_string(index=False))
    (results / "summary.json").write_text(json.dumps(summary_out, indent=1) + "\n")
    print(json.dumps(summary_out, indent=1))
    return 0


#: window-length bands of the coverage figure (s): issue 51 asks for 1-60 s
BANDS_S = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0)


def length_bands(cov: pd.DataFrame) -> pd.DataFrame:
    """The coverage figure per window-length band: windows, % whose interval holds the
    reference, median half-width, % within issue 51's width target, p95 |error|, % flagged, and the number of distinct traces
    (runs or sensor settings) cut where ``cov`` names them (``trace``). A band no trace is long
    enough for has 0 windows (NaN figures). Windows cut from one run overlap, so they are
    correlated: the counts are not independent trials."""
    band = pd.cut(cov["window_s"], list(BANDS_S), right=False)
    rows = []
    for interval, part in cov.groupby(band, observed=False):
        rows.append({"band_s": f"{interval.left:g}-{interval.right:g}", "windows": len(part),
                     "covered_pct": 100 * float(part["covered"].mean()) if len(part) else float("nan"),
                     "median_ci95_pct": float(part["ci95_pct"].median()),
                     # issue 51's widths: <= +-3 % from 5 s, <= +-5 % from 1 s
                     "within_width_target_pct": 100 * float((part["ci95_pct"] <= (3.0 if interval.left >= 5 else 5.0)).mean())
                     if len(part) else float("nan"),
                     "p95_abs_error_pct": float(part["error_pct"].abs().quantile(0.95)) if len(part) else float("nan"),
                     "flagged_pct": 100 * float((part["flag"].fillna("") != "").mean()) if len(part) else float("nan"),
                     "traces": int(part["trace"].nunique()) if "trace" in part else float("nan")})
    return pd.DataFrame(rows)


def recheck_bands(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The same windows' coverage figure per band under the interval as it was (``before``)
    and as it is now (``after``): windows, % covered, median and 95th-percentile half-width, %
    within issue 51's width target. The two must be the same windows (same seed): checked on
    their lengths and energies."""
    if len(before) != len(after) or not (np.allclose(before["window_s"], after["window_s"], atol=1e-3)
                                         and np.allclose(before["energy_j"], after["energy_j"], rtol=1e-4)):
        raise ValueError("recheck: the windows differ from the recorded ones (another seed or store?)")
    rows = []
    for name, cov in (("before", before), ("after", after)):
        band = pd.cut(cov["window_s"], list(BANDS_S), right=False)
        for interval, part in cov.groupby(band, observed=True):
            target = 3.0 if interval.left >= 5 else 5.0
            rows.append({"interval": name, "band_s": f"{interval.left:g}-{interval.right:g}",
                         "windows": len(part), "covered_pct": 100 * float(part["covered"].mean()),
                         "median_ci95_pct": float(part["ci95_pct"].median()),
                         "p95_ci95_pct": float(part["ci95_pct"].quantile(0.95)),
                         "within_width_target_pct": 100 * float((part["ci95_pct"] <= target).mean())})
    return pd.DataFrame(rows)


def _constants(gpu: str | None) -> str:
    """The JSON of GPU model ``gpu``'s sensor constants ("{}": the defaults)."""
    import dataclasses

    from radtrack.compute.energy_error import for_gpu

    return json.dumps(dataclasses.asdict(for_gpu(gpu))) if gpu else "{}"


def _recheck(results: Path, runs: pd.DataFrame, frames: dict, seed: int, per_run: int, constants: str) -> int:
    """--recheck: the recorded coverage.csv's windows (same seed, ``per_run`` a run) under the
    interval as it is now; writes coverage.csv, coverage_bands.csv and coverage_recheck.csv."""
    before = pd.read_csv(results / "coverage.csv")
    after = coverage(runs, frames, pd.read_csv(results / "counter.csv"), np.random.default_rng(seed),
                     constants, per_run=per_run)
    after["trace"] = after["workload"].astype(str) + after["letter"]
    table = recheck_bands(before, after)
    after.round(4).to_csv(results / "coverage.csv", index=False)
    length_bands(after).round(3).to_csv(results / "coverage_bands.csv", index=False)
    table.round(3).to_csv(results / "coverage_recheck.csv", index=False)
    print(table.round(2).to_string(index=False))
    return 0


def _coverage_summary(cov: pd.DataFrame) -> dict[str, object]:
    summary_out: dict[str, object] = {"windows": len(cov)}
    for name, part in [("all", cov), *cov.groupby("load")]:
        summary_out[f"coverage_{name}"] = {
            "windows": len(part), "covered_pct": round(100 * part["covered"].mean(), 1),
            "median_ci95_pct": round(float(part["ci95_pct"].median()), 2),
            "p95_abs_error_pct": round(float(part["error_pct"].abs().quantile(0.95)), 2),
            "flagged_pct": round(100 * (part["flag"] != "").mean(), 1)}
    for lo, hi in ((1, 2), (1, 5), (5, 60)):
        part = cov[(cov["window_s"] >= lo) & (cov["window_s"] < hi)]
        summary_out[f"coverage_{lo}-{hi}s"] = {
            "windows": len(part), "covered_pct": round(100 * part["covered"].mean(), 1),
            "median_ci95_pct": round(float(part["ci95_pct"].median()), 2),
            "max_ci95_pct": round(float(part["ci95_pct"].max()), 2),
            "p95_abs_error_pct": round(float(part["error_pct"].abs().quantile(0.95)), 2),
            "flagged_pct": round(100 * (part["flag"] != "").mean(), 1)}
    return summary_out


if __name__ == "__main__":
    sys.exit(main())
