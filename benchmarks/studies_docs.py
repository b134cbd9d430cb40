"""Write docs/studies/<name>.md from what benchmarks/studies_gpu.sh returned.

    .venv/bin/python benchmarks/studies_docs.py OUTDIR [--docs docs/studies]

OUTDIR holds, per study, ``<study>.csv`` (+ ``<study>.<table>.csv``), ``<study>.png`` when
the GPU host could render it, ``gpu.txt`` (nvidia-smi name and driver, then the date),
``host.txt`` (device_stages.sh) and ``studies-store.tgz``. A missing chart is rendered here
from the store through the same ``radtrack report --study --chart`` path. Each page says
whether the classic finding was reproduced, decided from the tables by the rule it states.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
STUDIES = {  # study -> experiment the short version recorded it in
    "power-variation": "power-variation",
    "multi-level-utilisation": "solo-studies",
    "time-to-accuracy": "time-to-accuracy",
    "host-gpu-eda": "solo-studies",
}


def _table(path: Path, columns: list[str] | None = None) -> str:
    if not path.is_file():
        return "(not produced)"
    frame = pd.read_csv(path)
    if columns:
        frame = frame[[c for c in columns if c in frame.columns]]
    if frame.empty:
        return "(empty)"
    def cell(x: object) -> str:
        if isinstance(x, float):
            return "-" if np.isnan(x) else f"{x:.4g}"
        return str(x)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |",
             "| " + " | ".join("---" for _ in frame.columns) + " |"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _host(outdir: Path) -> tuple[str, str, str]:
    lines = (outdir / "gpu.txt").read_text().splitlines() if (outdir / "gpu.txt").is_file() else []
    name, _, driver = (lines[0].partition(", ") if lines else ("unknown GPU", "", "unknown"))
    date = lines[1].strip() if len(lines) > 1 else "unknown date"
    return name.strip(), driver.strip(), date


def _chart(outdir: Path, study: str, docs: Path) -> str:
    target = docs / "img" / f"{study}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    source = outdir / f"{study}.png"
    if not source.is_file():
        store = outdir / "studies-store.tgz"
        if not store.is_file():
            return "(no chart: neither a PNG nor the store came back)"
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(store) as tar:
            tar.extractall(tmp, filter="data")
            work = Path(tmp) / "studies"
            proc = subprocess.run([sys.executable, "-m", "radtrack", "report", STUDIES[study],
                                   "--study", study, "--tracking-uri", f"sqlite:///{work}/mlflow.db",
                                   "--chart", str(target)], cwd=work, capture_output=True, text=True)
            if proc.returncode != 0:
                return f"(no chart: {proc.stderr.strip().splitlines()[-1]})"
    else:
        shutil.copyfile(source, target)
    return f"![{study}](img/{study}.png)"


def _finding(study: str, outdir: Path) -> str:
    """Whether the classic finding shows in the tables, by a stated rule."""
    main = outdir / f"{study}.csv"
    if not main.is_file():
        return "Not measured: the table did not come back."
    t = pd.read_csv(main)
    if study == "power-variation":
        solo = t[t["configuration"] == "solo"]
        shared = t[t["configuration"] != "solo"]
        if solo.empty or shared.empty:
            return "Not decidable: solo or co-located rows missing."
        dp = 100 * (shared["power_w_mean"] / solo["power_w_mean"].iloc[0] - 1)
        dc = 100 * (shared["sm_clock_mhz_mean"] / solo["sm_clock_mhz_mean"].iloc[0] - 1)
        changed = (dp.abs() > 2).any() or (dc.abs() > 1).any()
        return (f"Rule: reproduced when a co-located configuration's mean power differs from solo "
                f"by more than 2 % or its mean SM clock by more than 1 %. Power vs solo: "
                f"{', '.join(f'{c} {v:+.1f} %' for c, v in zip(shared['configuration'], dp, strict=True))}; "
                f"SM clock vs solo: {', '.join(f'{v:+.1f} %' for v in dc)}. "
                f"**{'Reproduced' if changed else 'Not reproduced'}.**")
    if study == "multi-level-utilisation":
        over = (t["gpu_util_pct"] > t["sm_active_pct"]) & (t["gpu_util_pct"] > t["tensor_active_pct"])
        low = t[t["script"].isin(["cifar_cnn", "matmul_loop"])]
        ok = over.sum() > len(t) / 2
        return (f"Rule: reproduced when GPU utilisation exceeds both SM active and tensor active "
                f"for most runs. It does for {int(over.sum())} of {len(t)} runs (GPU util / SM "
                f"active: {', '.join(f'{s} {r:.2f}' for s, r in zip(t['script'], t['util_over_sm_active'], strict=True))}). "
                f"Host-bound loops: SM active {', '.join(f'{s} {v:.1f} %' for s, v in zip(low['script'], low['sm_active_pct'], strict=True)) or 'n/a'}. "
                f"**{'Reproduced' if ok else 'Not reproduced'}.**")
    if study == "time-to-accuracy":
        s = pd.read_csv(outdir / f"{study}.summary.csv") if (outdir / f"{study}.summary.csv").is_file() else None
        if s is None or s.empty:
            return "Not decidable: no summary table."
        row = s.iloc[0]
        return (f"{int(row['reached'])} of {int(row['runs'])} runs reached {row['target']}; time to "
                f"target {row['time_to_target_s_mean']:.1f} s on average, CV "
                f"{row['time_to_target_s_cv']:.3f}; GPU utilisation over the first 3 minutes "
                f"{row['gpu_util_pct_first_3min_mean']:.1f} % (a host-bound loop: the classic "
                f"finding is low GPU and SM use, **"
                f"{'reproduced' if row['gpu_util_pct_first_3min_mean'] < 50 else 'not reproduced'}"
                f"** by the rule GPU utilisation < 50 %).")
    corr = pd.read_csv(outdir / f"{study}.correlations.csv") \
        if (outdir / f"{study}.correlations.csv").is_file() else pd.DataFrame()
    temps = corr[corr["cpu_metric"].astype(str).str.startswith("top/temp/")] if len(corr) else corr
    if temps.empty:
        return ("Not reproducible here: the host exposes no CPU temperature sensors to the `top` "
                "listener (`top/temp/*` absent), so CPU and GPU temperatures cannot be compared. "
                "The GPU-temperature baseline and the GPU-vs-CPU-utilisation correlations are above.")
    per = temps[(temps["gpu_metric"].str.endswith("/temp_c")) & (temps["script"] != "pooled")]
    spread = per.groupby("script")["r"].mean()
    differs = spread.max() - spread.min() > 0.3 if len(spread) > 1 else False
    return (f"Rule: reproduced when the mean r between GPU and CPU temperatures differs by more "
            f"than 0.3 between workloads: {', '.join(f'{k} {v:+.2f}' for k, v in spread.items())}. "
            f"**{'Reproduced' if differs else 'Not reproduced'}.**" if not np.isnan(spread).all()
            else "Not decidable: the correlations are undefined (constant readings).")


TABLES = {
    "power-variation": [("", ["workload", "configuration", "copies", "window_s", "power_w_mean",
                              "power_w_cv", "power_w_p5", "power_w_p95", "sm_clock_mhz_mean",
                              "sm_clock_mhz_cv", "temp_c_mean", "temp_c_p95",
                              "throughput_per_copy", "throughput_total", "energy_per_unit_j"])],
    "multi-level-utilisation": [("", ["script", "dtype", "gpu_util_pct", "sm_active_pct",
                                      "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct",
                                      "util_over_sm_active", "throughput"])],
    "time-to-accuracy": [("", ["run_name", "time_to_target_s", "time_to_target_step",
                               "last_val_acc", "duration_s", "gpu_util_pct_first_3min"]),
                         ("summary", None)],
    "host-gpu-eda": [("", None), ("baseline", None), ("correlations", None)],
}


def page(study: str, outdir: Path, docs: Path) -> str:
    name, driver, date = _host(outdir)
    readme = f"../../examples/studies/{study}/README.md"
    parts = [f"# {study}: measured on an {name}", "",
             f"{name}, driver {driver}, {date}; the short version of `benchmarks/studies_gpu.sh` "
             f"(`bash benchmarks/device_stages.sh OUT studies`). The question, the sheet and how to "
             f"read the table: [examples/studies/{study}]({readme}). Raw output: the tables below "
             f"come from `radtrack report {STUDIES[study]} --study {study}` on the returned store.",
             "", "## Classic finding", "", _finding(study, outdir), ""]
    for table, columns in TABLES[study]:
        path = outdir / (f"{study}.csv" if not table else f"{study}.{table}.csv")
        parts += [f"## {table or 'Table'}", "", _table(path, columns), ""]
    parts += ["## Chart", "", _chart(outdir, study, docs), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--docs", type=Path, default=REPO / "docs" / "studies")
    args = p.parse_args(argv)
    if not args.outdir.is_dir():
        print(f"studies_docs: {args.outdir}: not a directory", file=sys.stderr)
        return 2
    args.docs.mkdir(parents=True, exist_ok=True)
    for study in STUDIES:
        target = args.docs / f"{study}.md"
        target.write_text(page(study, args.outdir, args.docs))
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
