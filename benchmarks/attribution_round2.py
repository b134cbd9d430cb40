"""Issue 51's second H200 round from what benchmarks/attribution_h200_call.sh brought back.

    python benchmarks/attribution_round2.py RESULTS_DIR [--round1 DIR]

RESULTS_DIR holds ``tests.tar.xz`` (the gpu tests' stores), ``mixed_store.tar.xz`` +
``mixed_counter.csv`` and ``sensor.tar.xz``; ``--round1`` the first round's folder (its
``store.tar.xz`` and ``counter.csv``). Writes into RESULTS_DIR, all under the H200's sensor
constants (radtrack/compute/energy_error.py ``H200``):

- ``coverage_runs.csv``: 12 windows per run of every store with a counter reader
  (attribution_analysis.coverage);
- ``coverage_bursty.csv``: 60 windows per duty-cycled setting of the power sensor, the
  reference the mean of every identical window (attribution_analysis.bursty_coverage);
- ``coverage_summary.json``: coverage, widths against the targets (±5 % from 1 s, ±3 % from 5 s);
- ``splits.csv``: every co-located run re-split (attribution_analysis.splits), solo runs
  matched without MaxTime (the mixed sheet's solo rows ran 0.3 min, its pairs 0.5 min).

With ``--recheck`` (and ``--round1``) only the two coverage csv files again, the same windows
under the interval as it is now, and ``coverage_recheck.csv``: per band, before and after
(attribution_analysis.recheck_bands). With ``--bands`` only ``coverage_bands.csv``, from the two coverage csv files already there:
the coverage figure per window-length band, 1-60 s (attribution_analysis.length_bands).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attribution_analysis as aa  # noqa: E402


def _unpack(archive: Path, where: Path) -> Path:
    with tarfile.open(archive) as tar:  # pytest's 'current' links point outside: skipped
        tar.extractall(where, filter=lambda m, path: None if m.issym() else tarfile.data_filter(m, path))
    return where


def _summary(d: pd.DataFrame) -> dict[str, object]:
    out: dict[str, object] = {"windows": len(d), "covered_pct": round(100 * d["covered"].mean(), 1)}
    for lo, hi, target in ((1, 5, 5.0), (5, 61, 3.0)):
        p = d[(d["window_s"] >= lo) & (d["window_s"] < hi)]
        out[f"{lo}-{hi - 1}s"] = {
            "windows": len(p), "covered_pct": round(100 * p["covered"].mean(), 1),
            "median_ci95_pct": round(float(p["ci95_pct"].median()), 2),
            "within_target_pct": round(100 * float((p["ci95_pct"] <= target).mean()), 1),
            "p95_abs_error_pct": round(float(p["error_pct"].abs().quantile(0.95)), 2),
            "flagged_pct": round(100 * float((p["flag"].fillna("") != "").mean()), 1),
            "longest_s": round(float(p["window_s"].max()), 1)}
    return out


def _bands(res: Path) -> int:
    """coverage_bands.csv: the coverage figure per window-length band (1-60 s) over the
    run windows (vs the independent counter reader), the sensor's bursty windows (vs the mean
    of every identical window) and both."""
    runs = pd.read_csv(res / "coverage_runs.csv")
    runs["trace"] = runs["store"] + ":" + runs["workload"].astype(str) + runs["letter"]
    bursty = pd.read_csv(res / "coverage_bursty.csv")
    bursty["trace"] = "sensor:" + bursty["setting"]
    table = pd.concat([aa.length_bands(d).assign(windows_from=name) for name, d in
                       (("runs", runs), ("sensor settings", bursty), ("all", pd.concat([runs, bursty])))])
    table.round(3).to_csv(res / "coverage_bands.csv", index=False)
    print(table.round(2).to_string(index=False))
    return 0


def _recheck(res: Path, runs_cov: pd.DataFrame, bursty: pd.DataFrame) -> int:
    """The recorded windows' coverage before (the csv files there) and after (these)."""
    before = [pd.read_csv(res / "coverage_runs.csv"), pd.read_csv(res / "coverage_bursty.csv")]
    table = pd.concat([aa.recheck_bands(old, new.reset_index(drop=True)).assign(windows_from=name)
                       for name, old, new in (("runs", before[0], runs_cov), ("sensor settings", before[1], bursty),
                                              ("all", pd.concat(before), pd.concat([runs_cov, bursty])))])
    runs_cov.round(4).to_csv(res / "coverage_runs.csv", index=False)
    bursty.round(4).to_csv(res / "coverage_bursty.csv", index=False)
    table.round(3).to_csv(res / "coverage_recheck.csv", index=False)
    summary = json.loads((res / "coverage_summary.json").read_text())  # its splits' constants stay
    summary.update({"runs": _summary(runs_cov), "runs by load": {k: _summary(g) for k, g in runs_cov.groupby("load")},
                    "power sensor settings": _summary(bursty),
                    "by setting": {k: _summary(g) for k, g in bursty.groupby("setting")},
                    "all": _summary(pd.concat([runs_cov, bursty]))})
    (res / "coverage_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table.round(2).to_string(index=False))
    return _bands(res)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--round1", type=Path)
    parser.add_argument("--bands", action="store_true",
                        help="only the coverage per window-length band, from the coverage csv files "
                             "already in RESULTS_DIR (coverage_bands.csv)")
    parser.add_argument("--recheck", action="store_true",
                        help="only the coverage csv files again (the same windows) under the interval as it "
                             "is now, with coverage_recheck.csv: before and after per band")
    args = parser.parse_args(argv)
    if args.bands:
        return _bands(args.results)
    from radtrack.analysis.data import load_runs
    from radtrack.analysis.run_summaries import summarize_runs
    from radtrack.compute.energy_error import H200

    res, tmp = args.results, Path(tempfile.mkdtemp(prefix="attribution-round2-"))
    constants = json.dumps(dataclasses.asdict(H200))
    tests = _unpack(res / "tests.tar.xz", tmp / "tests") / "pt"
    stores = [("mixed", _unpack(res / "mixed_store.tar.xz", tmp / "mixed"), "mix", res / "mixed_counter.csv"),
              ("resnet+bert (test)", tests / "test_resnet_bert_accounting_on0", "gpuacct", None),
              ("twins (test)", tests / "test_twins_split_evenly_caps_f0", "att",
               tests / "test_twins_split_evenly_caps_f0" / "counter.csv")]
    if args.round1:
        stores.insert(0, ("round1", _unpack(args.round1 / "store.tar.xz", tmp / "round1"), "att",
                          args.round1 / "counter.csv"))
    coverages, tables = [], []
    for name, where, experiment, counter in stores:
        uri = f"sqlite:///{where / 'mlflow.db'}"
        runs = load_runs(experiment, tracking_uri=uri)
        aa._link_artifacts(where, runs)
        frames = {r["run_id"]: aa._frames(r, uri) for _, r in runs.iterrows()}
        if counter is not None:
            cov = aa.coverage(runs, frames, pd.read_csv(counter), np.random.default_rng(1), constants)
            coverages.append(cov.assign(store=name))
        if name == "round1" or args.recheck:
            continue  # its splits are round 1's (benchmarks/results/h200-2026-11-29-attribution)
        runs["param.max_time"] = "any"  # the limit is no parameter of the work
        summary = summarize_runs(runs, uri, quantiles=False)
        tables.append(aa.splits(runs, summary, frames, uri).assign(store=name))
    sensor = _unpack(res / "sensor.tar.xz", tmp / "sensor") / "sensor"
    bursty = aa.bursty_coverage(sensor, np.random.default_rng(1), constants, per_setting=60)
    runs_cov = pd.concat(coverages)
    if args.recheck:
        return _recheck(res, runs_cov, bursty)
    runs_cov.round(4).to_csv(res / "coverage_runs.csv", index=False)
    bursty.round(4).to_csv(res / "coverage_bursty.csv", index=False)
    pd.concat(tables).round(3).to_csv(res / "splits.csv", index=False)
    out = {"constants": dataclasses.asdict(H200), "runs": _summary(runs_cov),
           "runs by load": {k: _summary(g) for k, g in runs_cov.groupby("load")},
           "power sensor settings": _summary(bursty),
           "by setting": {k: _summary(g) for k, g in bursty.groupby("setting")},
           "all": _summary(pd.concat([runs_cov, bursty]))}
    (res / "coverage_summary.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["all"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
