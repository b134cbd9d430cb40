"""host-gpu-eda: the suite's GPU workloads one at a time, seen from the GPU and the host
(examples/studies/host-gpu-eda/).

- ``workloads``: per run, steady-state means (radtrack/analysis/studies/windows.py) of GPU
  utilisation, SM activity, power and temperatures, host CPU utilisation (system and the
  run's own processes) and every CPU temperature sensor the host exposes (``top/temp/*``);
- ``correlations``: Pearson correlation between each GPU metric and each CPU metric on
  1-s bins (:func:`radtrack.analysis.correlate`), per workload and pooled over all;
- ``baseline``: how well the other metrics predict GPU temperature. The runs go through the
  wide 1-s table of :func:`radtrack.compute.resample.resample`; the features are every other listener
  metric (GPU temperatures and cumulative counters left out); models: the training mean (the
  reference), a ridge-regularised linear model (numpy) and, when scikit-learn is installed
  (the ``studies`` extra), histogram gradient boosting. Cross-validated RMSE (degrees C):
  per workload, 5 contiguous folds in time (a fold is a fifth of the run, so neighbouring
  seconds do not leak across); pooled, fold i is the i-th fifth of every run at once.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from radtrack.analysis.studies import StudyResult
from radtrack.analysis.studies.windows import (
    gpu_key,
    gpu_scopes,
    steady_window,
    study_runs,
    study_series,
    window_mean,
)
from radtrack.compute.correlation import correlate
from radtrack.compute.resample import is_counter, resample
from radtrack.compute.summary import QUANTITIES, _keys_for
from radtrack.vocab.meaning import describe

WANTED = [r"[^/]+/gpu\d+/.+", r"throughput_.+"]  # any listener's GPU series
#: the host's side by declared role (whatever listener reads it): host and run CPU, host temperatures
HOST_ROLES = ("host_cpu", "proc_cpu", "temperature")
GPU_LEVELS = ("gpu_util_pct", "sm_active_pct", "power_w", "temp_c", "mem_temp_c")
#: summary column -> the summary quantity whose series it is (compute/summary.py QUANTITIES)
CPU_COLUMNS = {"cpu_pct": "cpu_pct", "proc_cpu_pct": "proc_cpu_pct"}
TARGET_RE = re.compile(r"[^/]+/gpu0/temp_c")
FOLDS = 5
RIDGE = 1e-3


def study(experiment: str, workload: int | None = None, tracking_uri: str | None = None,
          target: tuple[str, float] | None = None) -> StudyResult:
    runs = study_runs(experiment, workload, tracking_uri, "host-gpu-eda")
    runs = runs[runs["status"] == "FINISHED"]
    series = study_series(runs, WANTED, tracking_uri, HOST_ROLES)
    keep = set(_gpu_keys(series)) | set(_cpu_keys(series).values()) | set(_host_temps(series))
    series = series[series["metric"].isin(keep) | series["metric"].str.startswith("throughput_")]
    by_run = {run_id: one for run_id, one in series.groupby("run_id")}
    rows, corr_rows = [], []
    for _, run in runs.iterrows():
        one = by_run.get(run["run_id"], series.iloc[0:0])
        keys = list(one["metric"].unique())
        start, end, _ = steady_window(one)
        row: dict[str, object] = {"workload": run["workload"], "script": run["script"],
                                  "run_name": run["run_name"], "window_s": end - start}
        scope = (gpu_scopes(keys) or ["gpu0"])[0]
        for level in GPU_LEVELS:
            row[f"gpu_{level}" if not level.startswith("gpu_") else level] = window_mean(
                one, gpu_key(keys, scope, level), start, end)
        cpu = _cpu_keys(one)
        for column in CPU_COLUMNS:
            row[column] = window_mean(one, cpu.get(column), start, end)
        for key in _host_temps(one):
            row["cpu_temp_" + key.rsplit("/", 1)[-1]] = window_mean(one, key, start, end)
        rows.append(row)
        corr_rows += _correlations(one, str(run["script"]), run["workload"])
    if len(by_run) > 1:
        corr_rows += _correlations(series, "pooled", None)
    wide = resample(series[~series["metric"].str.startswith("throughput_")], 1.0) \
        if len(series) else pd.DataFrame(columns=["run_id", "seconds"])
    scripts = dict(zip(runs["run_id"], runs["script"], strict=True))
    baseline, notes = temperature_baseline(wide, scripts)
    tables = {"workloads": pd.DataFrame(rows), "correlations": pd.DataFrame(
        corr_rows, columns=["workload", "script", "gpu_metric", "cpu_metric", "r", "bins"]),
        "baseline": baseline}
    titles = {"workloads": "GPU and host per workload, steady-state means",
              "correlations": "Pearson r between GPU and CPU metrics on 1-s bins",
              "baseline": "Predicting GPU temperature from the other metrics: cross-validated "
                          "RMSE (C)"}
    return StudyResult("host-gpu-eda", experiment, tables, titles, notes)


def _gpu_keys(series: pd.DataFrame) -> list[str]:
    """One listener's series of each GPU quantity (the highest declared priority's)."""
    keys = sorted(series["metric"].unique())
    found = {gpu_key(keys, scope, name) for scope in gpu_scopes(keys) for name in GPU_LEVELS}
    return sorted(k for k in found if k)


def _cpu_keys(series: pd.DataFrame) -> dict[str, str]:
    """column -> the host's and the run's CPU series, by declared role."""
    keys = sorted(series["metric"].unique())
    out = {}
    for column, name in CPU_COLUMNS.items():
        found = _keys_for(next(q for q in QUANTITIES if q.name == name), keys)
        if found:
            out[column] = found[0]
    return out


def _host_temps(series: pd.DataFrame) -> list[str]:
    """The host's temperature sensors (role temperature, scope host)."""
    return sorted(k for k in series["metric"].unique()
                  if (m := describe(k)).role == "temperature" and m.scope == "host" and not m.stat)


def _correlations(series: pd.DataFrame, script: str, workload: object) -> list[dict[str, object]]:
    gpu = sorted(k for k in _gpu_keys(series) if k.rsplit("/", 1)[-1] in GPU_LEVELS)
    cpu = sorted(set(_cpu_keys(series).values()) | set(_host_temps(series)))
    if not gpu or not cpu:
        return []
    from radtrack.compute.correlation import align

    matrix = correlate(series, gpu + cpu, bin_s=1.0)
    binned = align(series, gpu + cpu, 1.0)
    out = []
    for g in gpu:
        for c in cpu:
            both = int((binned[g].notna() & binned[c].notna()).sum())
            out.append({"workload": workload, "script": script, "gpu_metric": g, "cpu_metric": c,
                        "r": float(matrix.loc[g, c]), "bins": both})
    return out


# The baseline -----------------------------------------------------------------------------

def _features(wide: pd.DataFrame, target: str) -> list[str]:
    """Every other metric column but GPU temperatures and cumulative counters."""
    return [c for c in wide.columns
            if c not in ("run_id", "seconds", "script", target) and not is_counter(c)
            and not (describe(str(c)).role == "temperature" and describe(str(c)).scope == "device")]


def fit_linear(x: np.ndarray, y: np.ndarray) -> object:
    """Ridge-regularised least squares on standardised features; returns a predictor."""
    mean, std = np.nanmean(x, axis=0), np.nanstd(x, axis=0)
    use = np.isfinite(mean) & (std > 0)
    mean, std = mean[use], std[use]

    def design(a: np.ndarray) -> np.ndarray:
        z = (a[:, use] - mean) / std
        z = np.where(np.isnan(z), 0.0, z)  # a missing reading counts as the training mean
        return np.hstack([np.ones((len(a), 1)), z])

    d = design(x)
    penalty = RIDGE * len(d) * np.eye(d.shape[1])
    penalty[0, 0] = 0.0
    coef = np.linalg.solve(d.T @ d + penalty, d.T @ y)
    return lambda a: design(a) @ coef


def fit_mean(x: np.ndarray, y: np.ndarray) -> object:
    level = float(np.mean(y))
    return lambda a: np.full(len(a), level)


def _models() -> dict[str, object]:
    models: dict[str, object] = {"training mean": fit_mean, "linear (numpy)": fit_linear}
    try:
        from sklearn.ensemble import HistGradientBoostingRegressor
    except ImportError:
        return models

    def fit_gbr(x: np.ndarray, y: np.ndarray) -> object:
        model = HistGradientBoostingRegressor(max_iter=150, random_state=0).fit(x, y)
        return model.predict

    models["gradient boosting (scikit-learn)"] = fit_gbr
    return models


def _fold_ids(frame: pd.DataFrame) -> np.ndarray:
    """Fold of each row: the fifth of its run's time span it falls in."""
    folds = np.zeros(len(frame), dtype=int)
    for _, idx in frame.groupby("run_id").indices.items():
        order = np.argsort(frame["seconds"].to_numpy()[idx], kind="stable")
        folds[idx[order]] = np.minimum(np.arange(len(idx)) * FOLDS // max(len(idx), 1), FOLDS - 1)
    return folds


def cross_validated_rmse(frame: pd.DataFrame, target: str, fit: object) -> tuple[float, int]:
    """RMSE over held-out folds (contiguous fifths of each run); NaN under 2 rows a fold."""
    frame = frame[frame[target].notna()]
    features = _features(frame, target)
    if len(frame) < 2 * FOLDS:
        return float("nan"), len(frame)
    x = frame[features].to_numpy(float) if features else np.zeros((len(frame), 0))
    y = frame[target].to_numpy(float)
    folds = _fold_ids(frame)
    errors = []
    for k in range(FOLDS):
        test = folds == k
        if test.sum() == 0 or (~test).sum() < 2:
            continue
        predict = fit(x[~test], y[~test])  # type: ignore[operator]
        errors.append(predict(x[test]) - y[test])
    residuals = np.concatenate(errors) if errors else np.array([])
    return (float(np.sqrt(np.mean(residuals ** 2))) if len(residuals) else float("nan"),
            len(frame))


def temperature_baseline(wide: pd.DataFrame, scripts: dict[str, str]
                         ) -> tuple[pd.DataFrame, list[str]]:
    """Cross-validated RMSE of each model, per workload (script) and pooled."""
    columns = ["scope", "model", "target", "rows", "features", "rmse_c"]
    targets = [c for c in wide.columns if TARGET_RE.fullmatch(str(c))]
    if wide.empty or not targets:
        return pd.DataFrame(columns=columns), ["no GPU temperature readings: no baseline "
                                               "(needs a listener of a GPU's temperature)"]
    target = (gpu_key(targets, "gpu0", "temp_c") if len(targets) > 1 else None) or targets[0]
    wide = wide.assign(script=wide["run_id"].map(scripts))
    scopes = [(s, g) for s, g in wide.groupby("script", sort=True)]
    if len(scopes) > 1:
        scopes.append(("pooled", wide))
    rows = []
    models = _models()
    for scope, frame in scopes:
        features = len(_features(frame[frame[target].notna()], target))
        for name, fit in models.items():
            rmse, n = cross_validated_rmse(frame, target, fit)
            rows.append({"scope": scope, "model": name, "target": target, "rows": n,
                         "features": features, "rmse_c": rmse})
    notes = [] if len(models) > 2 else ["scikit-learn is not installed: no gradient boosting "
                                        "(pip install 'radtrack[studies]')"]
    return pd.DataFrame(rows, columns=columns), notes
