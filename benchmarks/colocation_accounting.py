"""Co-location accounting on a real GPU: resnet and bert solo, time-shared and under MPS.

    python benchmarks/colocation_accounting.py --out DIR [--seconds 30] [--two-gpus]

Runs one sheet through the real CLI into DIR/mlflow.db (smi+dcgm+top at 0.1 s), then
prints, per workload: each run's attributed energy and method, the GPU's energy from the
runs' counters over the workload (independently of the accounting), the closure error
(attributed + idle + other vs that counter energy), and STP / ANTT / energy vs serial.
For the MPS workloads it compares the split rules (equal, thread-cap, memory) with the
throughput truth: each client's share of the server's work taken as its co-located rate
over its solo rate, normalised over the clients. Results also go to DIR/accounting.json.
Never changes a GPU setting; the MPS daemons radtrack starts are quit by radtrack.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
ROWS = [  # workload, devices, collocation, file, params
    (1, "0", "-", "resnet.py", "--batch-size 64"),
    (2, "0", "-", "bert.py", "--batch-size 32"),
    (3, "0", "-", "resnet.py", "--batch-size 64"),
    (3, "0", "-", "bert.py", "--batch-size 32"),
    (4, "0", "MPS", "resnet.py", "--batch-size 64"),
    (4, "0", "MPS", "bert.py", "--batch-size 32"),
    (5, "0", "MPS:70", "resnet.py", "--batch-size 64"),
    (5, "0", "MPS:30", "bert.py", "--batch-size 32"),
]
TWO_GPUS = [(6, "0", "-", "resnet.py", "--batch-size 64"), (6, "1", "-", "bert.py", "--batch-size 32")]
EXPERIMENT = "accounting"


def write_sheet(path: Path, minutes: float, rows: list[tuple[int, str, str, str, str]]) -> None:
    lines = ["Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval,MaxTime"]
    for w, dev, col, script, params in rows:
        lines.append(f"{EXPERIMENT},{w},,,{dev},{col},{REPO / 'workloads' / script},smi+dcgm+top,"
                     f"{params},0.1,{minutes}")
    path.write_text("\n".join(lines) + "\n")


def counter_energy(client, run, start: float, end: float) -> dict[str, float]:
    """GPU UUID -> the energy counter's increase over [start, end], read from the run's smi
    trace (linear between counter readings), independently of radtrack's accounting."""
    path = client.download_artifacts(run.info.run_id, "telemetry/smi.parquet")
    smi = pd.read_parquet(path)
    out = {}
    for col in [c for c in smi.columns if c.endswith("/energy_j")]:
        scope = col.split("/")[1]
        uuid = run.data.tags.get(f"radtrack.listener.smi.{scope}.parent_uuid") or \
            run.data.tags.get(f"radtrack.listener.smi.{scope}.uuid")
        part = smi[["time", col]].dropna()
        t, v = part["time"].to_numpy(), part[col].to_numpy()
        if t[0] <= start and t[-1] >= end:
            out[uuid] = float(np.interp(end, t, v) - np.interp(start, t, v))
    return out


def mean_rate(client, run) -> float:
    """The script's mean logged throughput (samples/s) over the run."""
    history = client.get_metric_history(run.info.run_id, "throughput_samples_per_s")
    return float(np.mean([h.value for h in history])) if history else float("nan")


def mps_rules(client, runs, solo_rate: dict[str, float]) -> list[dict[str, object]]:
    """Each MPS workload: the clients' shares under every rule vs the throughput truth."""
    from radtrack.compute.attribution import MPS_RULES, account_gpu, window_edges
    from radtrack.compute.gpu_uses import run_uses

    out = []
    for workload in sorted({r.data.tags["radtrack.workload"] for r in runs
                            if r.data.tags.get("radtrack.collocation", "").startswith("mps")}):
        rows = [r for r in runs if r.data.tags["radtrack.workload"] == workload]
        uses, truth = [], {}
        for r in rows:
            frames = {name: pd.read_parquet(client.download_artifacts(r.info.run_id, f"telemetry/{name}.parquet"))
                      for name in ("smi", "dcgm")
                      if any(a.path.endswith(f"{name}.parquet")
                             for a in client.list_artifacts(r.info.run_id, "telemetry"))}
            start = r.info.end_time / 1000 - r.data.metrics["summary/duration_s"]
            uses += list(run_uses(r.info.run_id, frames, r.data.tags, r.data.tags["radtrack.collocation"],
                                  start, r.info.end_time / 1000).values())
            script = Path(r.data.params["script"]).name
            truth[r.info.run_id] = mean_rate(client, r) / solo_rate[script]
        total = sum(truth.values())
        edges = window_edges(min(u.start for u in uses), max(u.end for u in uses))
        for rule in MPS_RULES:
            acc = account_gpu(uses, edges, mps_rule=rule)
            shares = {u.run: acc.energy_j(u.run) for u in uses}
            s = sum(shares.values())
            for r in rows:
                out.append({"workload": workload, "run": r.info.run_name,
                            "collocation": r.data.tags["radtrack.collocation"], "rule": rule,
                            "share": shares[r.info.run_id] / s if s else np.nan,
                            "truth": truth[r.info.run_id] / total})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--two-gpus", action="store_true", help="also one row per GPU on GPUs 0 and 1")
    ap.add_argument("--only-two-gpus", action="store_true", help="just the rows on GPUs 0 and 1")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    sheet = a.out / "accounting.csv"
    rows = TWO_GPUS if a.only_two_gpus else ROWS + (TWO_GPUS if a.two_gpus else [])
    write_sheet(sheet, a.seconds / 60.0, rows)
    uri = f"sqlite:///{a.out / 'mlflow.db'}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(a.out / ".radtrack"),
           "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "radtrack", str(sheet)], env=env, cwd=a.out)
    if proc.returncode != 0:
        print(f"radtrack exited {proc.returncode}")
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    all_runs = client.search_runs([exp.experiment_id], max_results=500)
    rows = [r for r in all_runs if r.data.tags.get("radtrack.role") == "row"]
    parents = {r.data.tags["radtrack.workload"]: r for r in all_runs
               if r.data.tags.get("radtrack.role") == "workload"}
    solo_rate = {}
    report = {"workloads": [], "runs": []}
    for workload in sorted(parents, key=int):
        p = parents[workload]
        mine = sorted([r for r in rows if r.data.tags["radtrack.workload"] == workload],
                      key=lambda r: r.info.run_name)
        m = p.data.metrics
        start = min(r.info.end_time / 1000 - r.data.metrics["summary/duration_s"] for r in mine)
        end = start + m.get("summary/workload/duration_s", np.nan)
        counters: dict[str, float] = {}
        for r in mine:
            for uuid, joules in counter_energy(client, r, start, end).items():
                counters.setdefault(uuid, joules)
        attributed = sum(r.data.metrics.get(k, 0.0) for r in mine for k in r.data.metrics
                         if k.startswith("summary/attribution/") and k.endswith("/energy_j"))
        idle_other = sum(v for k, v in m.items() if k.startswith("summary/workload/gpu")
                         and k.endswith(("/idle_energy_j", "/other_energy_j")))
        counter = sum(counters.values()) if counters else np.nan
        entry = {"workload": workload, "rows": len(mine), "gpu_energy_j": m.get("summary/workload/energy_j"),
                 "counter_energy_j": counter, "attributed_j": attributed, "idle_other_j": idle_other,
                 "closure_pct": 100 * ((attributed + idle_other) / counter - 1) if counters else np.nan,
                 "stp": m.get("summary/workload/stp"), "antt": m.get("summary/workload/antt"),
                 "energy_vs_serial_pct": m.get("summary/workload/energy_vs_serial_pct")}
        report["workloads"].append(entry)
        for r in mine:
            rate = mean_rate(client, r)
            script = Path(r.data.params["script"]).name
            if len(mine) == 1:
                solo_rate[script] = rate
            report["runs"].append({
                "workload": workload, "run": r.info.run_name, "collocation": r.data.tags.get("radtrack.collocation"),
                "method": r.data.tags.get("radtrack.attribution.gpu0"),
                "energy_j": r.data.metrics.get("summary/attribution/gpu0/energy_j"),
                "gpu_energy_j": r.data.metrics.get("summary/smi/gpu0/energy_j"),
                "sm_share_pct": r.data.metrics.get("summary/attribution/gpu0/sm_share_pct"),
                "proc_sm_util_pct_mean": r.data.metrics.get("summary/smi/gpu0/proc_sm_util_pct/mean"),
                "samples_per_s": rate,
                "energy_per_sample_j": (r.data.metrics.get("summary/attribution/gpu0/energy_j", np.nan)
                                        / (rate * r.data.metrics["summary/duration_s"]))})
    report["mps_rules"] = mps_rules(client, rows, solo_rate) if solo_rate else []
    pd.set_option("display.width", 200)
    print(pd.DataFrame(report["runs"]).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(pd.DataFrame(report["workloads"]).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    rules = pd.DataFrame(report["mps_rules"])
    if not rules.empty:
        rules["abs_error"] = (rules["share"] - rules["truth"]).abs()
        print(rules.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print(rules.groupby("rule")["abs_error"].agg(["mean", "max"]).to_string(float_format=lambda x: f"{x:.3f}"))
    (a.out / "accounting.json").write_text(json.dumps(report, indent=1, default=float))
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
