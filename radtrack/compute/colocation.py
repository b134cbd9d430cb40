"""Co-located workloads as a whole: measured energy, work, STP, ANTT, energy vs serial.

For a workload of n co-located runs, each with a solo baseline (radtrack/compute/interference.py:
the same File and params run alone on the same host, radtrack/compute/baselines.py), with slowdown
``s_i = solo rate / co-located rate`` (or co-located / solo duration):

- system throughput ``STP = sum(1 / s_i)``: how many solo machines' worth of work the
  shared GPU did (1 = no gain over running them one after another, n = no interference);
- average normalised turnaround time ``ANTT = mean(s_i)``: how much longer each job took;
- energy vs serial: the workload's measured GPU energy against the energy the same work
  would have taken run solo, one after another: ``sum(solo energy per unit_i x work_i)``.

With repeats, each carries a 95 % interval (``stp_lo``/``_hi``, ``antt_lo``/``_hi``,
``energy_vs_serial_pct_lo``/``_hi``), by the delta method from the rows' own intervals
(radtrack/compute/interference.py: the log standard deviation of each row's slowdown and
energy per unit ratio, recovered from its bounds): var(STP) = sum (sd_i / s_i)^2,
var(ANTT) = sum (s_i sd_i)^2 / n^2 (both as t intervals on the fewest degrees of freedom of
the rows, the rows' errors taken as independent), and the log of energy vs serial's ratio
has variance sum (S_i / S)^2 sd_e,i^2, S_i being row i's serial energy: the workload's energy
over the serial energy is the serial-energy-weighted mean of the rows' per-unit ratios
(idle and other energy aside). Without a row's interval, none: ``interval_note`` says why.

STP and ANTT as defined by Eyerman and Eeckhout, "System-level performance metrics for
multiprogram workloads", IEEE Micro 28(3), 2008.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from radtrack.compute.interference import NO_REPEATS, interference
from radtrack.compute.variability import log_sd_of, t_quantile, variability
from radtrack.vocab import schema

COLUMNS = ["experiment", "workload", "launch", "rows", "collocation", "sharing", "devices", "duration_s",
           "energy_j", "co2e_g", "idle_energy_j", "other_energy_j", "work", "work_unit", "energy_per_unit_j", "stp",
           "antt", "serial_energy_j", "energy_vs_serial_pct", "stp_lo", "stp_hi", "antt_lo", "antt_hi",
           "energy_vs_serial_pct_lo", "energy_vs_serial_pct_hi", "interval_note", "note"]
_WORKLOAD_PREFIX = f"metric.{schema.SUMMARY_WORKLOAD_PREFIX}"


def _value(parent: pd.Series | None, key: str) -> float:
    value = None if parent is None else parent.get(f"{_WORKLOAD_PREFIX}{key}")
    return float(value) if value is not None and pd.notna(value) else float("nan")


def _per_gpu(parent: pd.Series | None, suffix: str) -> float:
    """Sum of ``summary/workload/<device>/<suffix>`` over the workload's devices (GPUs, CPU
    packages and their DRAM: ``pkg0/dram``)."""
    if parent is None:
        return float("nan")
    total = 0.0
    found = False
    for column, value in parent.items():
        if (isinstance(column, str) and column.startswith(_WORKLOAD_PREFIX)
                and column.endswith(suffix) and column.count("/") >= 3 and pd.notna(value)):
            total += float(value)
            found = True
    return total if found else float("nan")


def _work(row: pd.Series) -> float:
    if row.get("work_unit") == "run" or pd.isna(row.get("throughput")):
        return 1.0
    return float(row["throughput"]) * float(row["duration_s"])


def _intervals(group: pd.DataFrame, slowdown: pd.Series, serial: np.ndarray,
               row: dict[str, object]) -> None:
    """``row``'s STP, ANTT and energy vs serial intervals from its rows' (module docstring)."""
    def numbers(column: str) -> pd.Series:
        return pd.to_numeric(group.get(column, pd.Series(np.nan, index=group.index)), errors="coerce")

    df = numbers("interval_df")
    if df.isna().any():
        row["interval_note"] = NO_REPEATS
        return
    dfs = df.astype(int).to_numpy()
    s = slowdown.to_numpy()
    sd = np.array([log_sd_of(lo, hi, d) for lo, hi, d in
                   zip(numbers("slowdown_lo"), numbers("slowdown_hi"), dfs,
                       strict=True)])
    t = t_quantile(int(dfs.min()))
    stp_sd = float(np.sqrt(np.sum((sd / s) ** 2)))
    antt_sd = float(np.sqrt(np.sum((s * sd) ** 2)) / len(s))
    # both are sums of positive ratios: a wide interval stops at 0, not below it
    row.update(stp_lo=max(row["stp"] - t * stp_sd, 0.0), stp_hi=row["stp"] + t * stp_sd,
               antt_lo=max(row["antt"] - t * antt_sd, 0.0), antt_hi=row["antt"] + t * antt_sd)
    lo = 1.0 + numbers("energy_per_unit_change_pct_lo") / 100
    hi = 1.0 + numbers("energy_per_unit_change_pct_hi") / 100
    e_sd = np.array([log_sd_of(a, b, d) for a, b, d in zip(lo, hi, dfs, strict=True)])
    ratio = 1.0 + float(row.get("energy_vs_serial_pct", np.nan)) / 100
    weights = serial / serial.sum() if serial.sum() > 0 else serial * np.nan
    log_sd = float(np.sqrt(np.sum((weights * e_sd) ** 2)))
    if np.isfinite(log_sd) and np.isfinite(ratio) and ratio > 0:
        row["energy_vs_serial_pct_lo"] = 100.0 * (ratio * np.exp(-t * log_sd) - 1.0)
        row["energy_vs_serial_pct_hi"] = 100.0 * (ratio * np.exp(t * log_sd) - 1.0)
    row["interval_note"] = ""


def workload_table(runs: pd.DataFrame, inter: pd.DataFrame) -> pd.DataFrame:
    """One row per co-located workload of ``runs`` (a :func:`load_runs` frame, parent runs
    included), from ``inter`` (the :func:`interference` table of the same runs)."""
    if runs.empty or inter.empty:
        return pd.DataFrame(columns=COLUMNS)
    role = runs.get(f"tag.{schema.ROLE}", pd.Series("", index=runs.index))
    # one row per launch (radtrack.launch_id): two launches of one workload number, by two
    # people or one person twice, are two workloads (runs recorded before launch ids: one)
    launches = runs.get(f"tag.{schema.LAUNCH_ID}", pd.Series("", index=runs.index)).fillna("")
    launch_of = dict(zip(runs["run_id"], launches, strict=True))
    inter = inter.assign(launch=inter["run_id"].map(launch_of).fillna("")
                         if "run_id" in inter else "")
    out = []
    for (experiment, workload, launch), group in inter.groupby(["experiment", "workload", "launch"],
                                                               sort=True):
        same = ((runs["experiment"] == experiment) & (runs["workload"].astype(str) == str(workload))
                & (launches == launch))
        match = runs[same & (role == schema.ROLE_WORKLOAD)]
        parent = match.iloc[0] if len(match) else None
        children = runs[same & (role != schema.ROLE_WORKLOAD)]
        row: dict[str, object] = {
            "experiment": experiment, "workload": workload, "launch": launch, "rows": len(group),
            "collocation": ",".join(sorted({str(c) for c in group["collocation"]})),
            "sharing": ", ".join(sorted({str(c) for c in group["sharing"]}))
            if "sharing" in group else "",
            "devices": ",".join(sorted({str(d) for d in children.get("devices", [])})),
            "duration_s": _value(parent, "duration_s"),
            "energy_j": _value(parent, "energy_j"),
            "co2e_g": _value(parent, "co2e_g"),
            "idle_energy_j": _per_gpu(parent, "/idle_energy_j"),
            "other_energy_j": _per_gpu(parent, "/other_energy_j"),
        }
        if np.isnan(row["duration_s"]):  # recorded before accounting: the longest row
            row["duration_s"] = float(group["duration_s"].max())
        notes = [str(n) for n in group["note"] if isinstance(n, str) and n]
        if np.isnan(row["energy_j"]):
            notes.append("no measured workload energy (recorded without co-location accounting)")
        units = set(group["work_unit"].dropna())
        if group["slowdown"].notna().all():
            # STP, ANTT and the serial energy need each row's own slowdown and work only
            # (a row's solo energy per unit times its work is joules, whatever its unit);
            # the workload's work total and energy per unit need one unit for every row.
            work = [_work(r) for _, r in group.iterrows()]
            slowdown = group["slowdown"].astype(float)
            row["stp"] = float((1.0 / slowdown).sum())
            row["antt"] = float(slowdown.mean())
            solo_per_unit = group["solo_energy_per_unit_j"].astype(float).to_numpy()
            row["serial_energy_j"] = float((solo_per_unit * np.asarray(work)).sum())
            row["energy_vs_serial_pct"] = 100.0 * (row["energy_j"] / row["serial_energy_j"] - 1.0)
            _intervals(group, slowdown, solo_per_unit * np.asarray(work), row)
            if len(units) == 1:
                row.update(work=float(sum(work)), work_unit=units.pop())
                row["energy_per_unit_j"] = row["energy_j"] / row["work"] if row["work"] else np.nan
            else:
                notes.append(f"rows count different units of work ({', '.join(sorted(units))}): "
                             "no common work total")
        else:
            notes.append("STP, ANTT and energy vs serial need a slowdown for every row "
                         "(a solo baseline, and a rate or an untruncated span)")
        row["note"] = "; ".join(dict.fromkeys(notes))
        row["_start"] = children["start_time"].min() if "start_time" in children else 0
        out.append(row)
    table = pd.DataFrame(out, columns=[*COLUMNS, "_start"])
    return table.sort_values(["experiment", "workload", "_start"], kind="stable")[COLUMNS] \
        .reset_index(drop=True)


class WorkloadRuns(NamedTuple):
    """A co-located workload's stored runs, as :func:`workload_totals` wants them."""

    runs: pd.DataFrame  # load_runs rows: its parent, its rows, the solo runs of its scripts and
    # the co-located runs of its scripts in other workloads (repeats: the intervals)
    summaries: pd.DataFrame  # summarize_runs of the rows and solo runs


def workload_totals(stored: WorkloadRuns, workload: int | str,
                    launch: str | None = None) -> dict[str, object] | None:
    """The :func:`workload_table` row of ``workload`` (of its launch ``launch`` where the
    workload number has several; None when it has none)."""
    spread = variability(stored.runs, stored.summaries)  # repeats: the figures' intervals
    table = workload_table(stored.runs, interference(stored.runs, stored.summaries, elsewhere=True,
                                                     spread=spread))
    table = table[table["workload"].astype(str) == str(workload)]
    if launch is not None and (table["launch"] == launch).any():
        table = table[table["launch"] == launch]
    return None if table.empty else table.iloc[-1].to_dict()


#: the workload's figures its closing line and the page's Energy shares tab say, each by its
#: report column's name (radtrack/vocab/meaning_words.py REPORT_COLUMNS), and their formats
SAID = (("stp", ".2f"), ("antt", ".2f"), ("energy_vs_serial_pct", "+.1f"))


def _number(totals: dict[str, object], key: str) -> float | None:
    value = totals.get(key)
    return float(value) if isinstance(value, (int, float)) and value == value else None


def _bounds(totals: dict[str, object], key: str, form: str) -> str:
    lo, hi = _number(totals, f"{key}_lo"), _number(totals, f"{key}_hi")
    return f" [{lo:{form}}, {hi:{form}}]" if lo is not None and hi is not None else ""


def figures_said(totals: dict[str, object], missing: str = "-") -> str:
    """``stp 1.04 [0.98, 1.09], antt 1.93 [1.82, 2.03], energy_vs_serial_pct -2.8``: a
    workload's figures (a :func:`workload_table` row, or its parent run's stored
    ``summary/workload/...`` without the prefix) by the names the report's columns and files
    give them, each with its 95 % interval where repeats gave one; ``missing`` for a figure
    the workload has none of."""
    words = []
    for key, form in SAID:
        value = _number(totals, key)
        words.append(f"{key} {missing}" if value is None
                     else f"{key} {value:{form}}{_bounds(totals, key, form)}")
    return ", ".join(words)


def figures_line(totals: dict[str, object]) -> tuple[str, str]:
    """The launcher's closing lines of a co-located workload (a :func:`workload_totals` row):
    :func:`figures_said`, and whence its intervals or what to do where there are none; two
    lines, so that each fits the 120 columns the launcher's lines keep to."""
    line = figures_said(totals, missing="n/a (a solo run has no energy)")
    if _bounds(totals, "stp", ".2f"):
        return line, "[95 % intervals] from repeats"
    # short: the line is one of the launcher's; the report's interval_note says it in full
    return line, "no 95 % intervals: no repeats; how to repeat: docs/sheets.md, Repeats"
