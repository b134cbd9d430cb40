"""Statistics and Markdown tables of benchmarks/overhead.py: the mean difference of time per
step against the bare workload with its 95 % confidence interval (Welch), and the talk's
three tables (time, space, CPU per tool, light vs heavy)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

# two-sided 95 % Student t quantiles, df 1..30 (beyond: the normal's 1.96)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: float) -> float:
    """The 97.5 % t quantile at ``df`` degrees of freedom, rounded down (conservative)."""
    k = max(1, math.floor(df))
    return _T975[k - 1] if k <= len(_T975) else 1.96


def mean_diff_ci(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """mean(a) - mean(b) with its 95 % confidence interval (Welch's t); needs 2+ of each."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("a confidence interval needs at least two repeats on each side")
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    d = statistics.fmean(a) - statistics.fmean(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    h = t975(df) * se
    return d, d - h, d + h


def _by(records: Iterable[dict], workload: str, mode: str) -> list[dict]:
    return [r for r in records if r["workload"] == workload and r["mode"] == mode and r.get("ok")]


def compare(records: list[dict], workload: str, mode: str) -> dict[str, float] | None:
    """Time per step of ``mode`` against ``bare`` of the same batches (calls), in %."""
    runs = _by(records, workload, mode)
    batches = {r["batch"] for r in runs}
    bare = [r for r in _by(records, workload, "bare") if r["batch"] in batches]
    if len(runs) < 2 or len(bare) < 2:
        return None
    a = [r["step_s"] for r in runs]
    b = [r["step_s"] for r in bare]
    base = statistics.fmean(b)
    d, lo, hi = mean_diff_ci(a, b)
    return {"step_ms": 1e3 * statistics.fmean(a), "bare_ms": 1e3 * base, "pct": 100 * d / base,
            "lo": 100 * lo / base, "hi": 100 * hi / base, "n": len(a), "n_bare": len(b)}


def _mean(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.fmean(vals) if vals else None


def _fmt(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def tables(records: list[dict], modes: list[str], workloads: list[str]) -> str:
    """The three Markdown tables for every mode measured."""
    present = [m for m in modes if any(r["mode"] == m for r in records)]
    head = " | ".join(workloads)
    out = [f"### Time per step (steady state) vs the bare workload: {head}", "",
           "| tool | " + " | ".join(f"{w}: ms/step | {w}: difference [95 % CI] | {w}: n"
                                   for w in workloads) + " |",
           "|---|" + "---|---|---|" * len(workloads)]
    for m in present:
        cells = []
        for w in workloads:
            c = compare(records, w, m) if m != "bare" else None
            if m == "bare":
                runs = _by(records, w, m)
                step = _mean(runs, "step_s")
                cells += [_fmt(step and 1e3 * step, ".3f"), "baseline", str(len(runs))]
            elif c is None:
                cells += ["n/a", "n/a", "0"]
            else:
                cells += [f"{c['step_ms']:.3f}", f"{c['pct']:+.2f} % [{c['lo']:+.2f}, {c['hi']:+.2f}]",
                          f"{c['n']} vs {c['n_bare']}"]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    out += ["", "### Space a run adds to the store (means per run)", "",
            "| tool | " + " | ".join(f"{w}: metric rows | {w}: store MB | {w}: vs none, MB"
                                   for w in workloads) + " |",
            "|---|" + "---|---|---|" * len(workloads)]
    for m in present:
        if m == "bare":
            continue
        cells = []
        for w in workloads:
            runs, none = _by(records, w, m), _by(records, w, "none")
            size, base = _mean(runs, "store_bytes"), _mean(none, "store_bytes")
            added = None if size is None or base is None else (size - base) / 1e6
            cells += [_fmt(_mean(runs, "metric_rows"), ".0f"), _fmt(size and size / 1e6, ".3f"),
                      _fmt(added, "+.3f")]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    out += ["", "### CPU-seconds per run (means)", "",
            "| tool | " + " | ".join(f"{w}: listeners | {w}: launcher | {w}: workload | {w}: wall s"
                                   for w in workloads) + " |",
            "|---|" + "---|---|---|---|" * len(workloads)]
    for m in present:
        cells = []
        for w in workloads:
            runs = _by(records, w, m)
            cells += [_fmt(_mean(runs, k), ".2f") for k in ("cpu_listeners_s", "cpu_launcher_s",
                                                            "cpu_workload_s", "wall_s")]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"
