"""Checks on the results: figures that cannot be trusted as they stand, each said next to
the figure with why and what to do (docs/analysis.md, "What each figure means").

One function per check, pure (plain mappings in, a :class:`Flag` or None out); the report
(radtrack/analysis/report.py) and the page's Summary tab (radtrack/frontend/summaries.py) both call
:func:`run_checks`, the report also :func:`interference_checks`. Inputs:

- a run's *record*: a :func:`radtrack.analysis.data.load_runs` row as a dict
  (``metric.<key>`` stored values, ``tag.<name>``, ``devices``, ...);
- its *summary*: its :func:`radtrack.analysis.summarize_runs` row (``duration_s``,
  ``samples``, ``energy_j``, ``gpu_util_pct_mean``, ``cpu_pct_mean``, ...), with
  ``energy_note`` where radtrack/analysis/energy_columns.py gave one;
- for a co-located run, its :func:`radtrack.compute.interference` row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import pandas as pd

from radtrack.compute.record_summaries import DEVICE_SCOPES, core_count, summaries
from radtrack.compute.record_summaries import finite as _finite
from radtrack.compute.record_summaries import number as _number
from radtrack.vocab import energy_sources as es
from radtrack.vocab import schema

#: without repeats, a slowdown under 1 - this is beyond run-to-run noise
NOISE_FLOOR = 0.05
#: the host CPU others used during a run (% of all cores) above which the host was busy
BUSY_HOST_PCT = 25.0
#: with no per-process CPU reading, the host CPU (% of all cores) above which it was busy
BUSY_HOST_TOTAL_PCT = 90.0
#: SM utilisation of other processes on the run's GPU (%, mean) above which it was shared
BUSY_GPU_PCT = 5.0
#: fewer readings than this in a run's span make its means and maxima anecdotes
MIN_SAMPLES = 10
#: the energy counter and integrated power disagreeing by more than this (%)
POWER_MISMATCH_PCT = 10.0
#: spans shorter than this are not compared (the series' first reading lags the start)
POWER_MISMATCH_MIN_S = 20.0
#: GPU utilisation (%) under which a GPU row did nothing on its GPU
IDLE_GPU_PCT = 1.0

CHECK_COLUMNS = ["run_id", "run_name", "figure", "check", "why", "todo"]
_METRIC = "metric."
@dataclass(frozen=True)
class Flag:
    """One result that cannot be trusted as it stands."""

    run_id: str
    run_name: str
    figure: str  # the column it qualifies (``slowdown``, ``energy_j``, ``*``: the whole run)
    check: str  # short name: faster-than-solo, busy-baseline, few-samples, ...
    why: str
    todo: str


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _name(record: Mapping[str, object]) -> str:
    return _text(record.get("run_name")) or _text(record.get("run_id"))[:8]


def is_gpu_row(record: Mapping[str, object]) -> bool:
    """The row asked for a GPU (its Devices cell names one)."""
    devices = _text(record.get("devices")).strip()
    return devices not in ("", "-", "none", "cpu")


# One function per check ------------------------------------------------------------------

def faster_than_solo(inter: Mapping[str, object]) -> Flag | None:
    """A co-located run faster than its solo baseline beyond noise: slowdown < 1 beyond the
    interval of the repeats (``slowdown_hi`` < 1), or, without repeats, below 1 - NOISE_FLOOR."""
    slowdown, hi = _number(inter.get("slowdown")), _number(inter.get("slowdown_hi"))
    if not math.isfinite(slowdown):
        return None
    if math.isfinite(hi):
        if hi >= 1.0:
            return None
        why = (f"slowdown {slowdown:.3g} (95 % interval up to {hi:.3g}): co-located faster than "
               "solo beyond the runs' spread")
    elif slowdown < 1.0 - NOISE_FLOOR:
        why = (f"slowdown {slowdown:.3g}: co-located faster than solo by more than "
               f"{100 * NOISE_FLOOR:g} % (no repeats, so no spread to compare with)")
    else:
        return None
    return Flag(_text(inter.get("run_id")), _name(inter), "slowdown", "faster-than-solo", why,
                "check that the solo run measured the same work (params, data, epochs), was not "
                "slowed by something else, and repeat both to get a spread")


def _radtrack_pct(record: Mapping[str, object]) -> float:
    """radtrack's own CPU over the run's span, % of one core: the launcher process's (its
    MLflow import and storing) and the listeners' (``summary/monitoring/*``); 0 unknown."""
    duration = _number(record.get(_METRIC + schema.DURATION_KEY))
    used = [_number(record.get(_METRIC + k))
            for k in (schema.MONITORING_LAUNCHER_CPU, schema.MONITORING_LISTENERS_CPU)]
    total = sum(u for u in used if math.isfinite(u))
    return 100.0 * total / duration if math.isfinite(duration) and duration > 0 else 0.0


def busy_host(record: Mapping[str, object], summary: Mapping[str, object]) -> str | None:
    """Why the host or the GPU was busy with other work during a run (a solo run: a baseline
    taken so is too slow); None when it was not, or nothing says.

    Host: ``cpu_pct_mean`` (top/cpu_pct, % of all cores) less the run's own processes
    (``proc_cpu_pct_mean``, % of one core) and radtrack's (its launcher and listeners,
    ``summary/monitoring/launcher_cpu_s`` and ``listeners_cpu_s`` over the run's duration),
    over the cores the top listener saw; without
    per-core readings, at most all of one core) above BUSY_HOST_PCT; without a per-process
    reading, the host above BUSY_HOST_TOTAL_PCT. GPU:
    the SM utilisation of processes not the run's (smi's ``all_procs_sm_util_pct`` less
    ``proc_sm_util_pct``) above BUSY_GPU_PCT on any of its GPUs.
    """
    reasons = []
    host = _number(summary.get("cpu_pct_mean"))
    if math.isfinite(host):
        own = _number(summary.get("proc_cpu_pct_mean"))
        cores = core_count(record)
        # radtrack's own processes (the launcher, the listeners) are not the host's other work
        own = own + _radtrack_pct(record) if math.isfinite(own) else own
        if math.isfinite(own) and cores:
            others = host - own / cores
            if others > BUSY_HOST_PCT:
                reasons.append(f"host CPU {host:.0f} % of all cores, {others:.0f} % of it not the "
                               f"run's own processes ({own:.0f} % of one core, {cores} cores)")
        elif math.isfinite(own):
            # cores unknown (no per-core reading): the run's own share of all cores is at
            # most its share of one core, and at most all of them
            others = host - min(own, 100.0)
            if others > BUSY_HOST_PCT:
                reasons.append(f"host CPU {host:.0f} % of all cores, at least {others:.0f} % of it "
                               f"not the run's own processes ({own:.0f} % of one core)")
        elif host > BUSY_HOST_TOTAL_PCT:
            reasons.append(f"host CPU {host:.0f} % of all cores (no per-process reading to tell "
                           "the run's own share)")
    # a device's SM share of every process (role proc_share, the device's) and the run's own
    # (the device's share): the rest is other processes'
    shares = [x for x in summaries(record) if x.meaning.role == "proc_share" and x.meaning.stat == "mean"]
    for every in shares:
        if every.meaning.scope != "device" or not every.series.endswith("/all_procs_sm_util_pct"):
            continue
        own = [x.value for x in shares if x.device == every.device and x.meaning.scope == "device_share"
               and x.series.rsplit("/", 1)[0] == every.series.rsplit("/", 1)[0]]
        others = every.value - (own[0] if own else 0.0)
        if own and others > BUSY_GPU_PCT:
            reasons.append(f"other processes used {others:.0f} % of {every.device}'s SMs")
    return "; ".join(reasons) or None


def busy_baseline(inter: Mapping[str, object],
                  solos: Mapping[str, tuple[Mapping[str, object], Mapping[str, object]]]) -> Flag | None:
    """A slowdown measured against a solo run taken on a busy host (:func:`busy_host`).
    ``solos``: solo run id -> (record, summary)."""
    found = []
    for run_id in _text(inter.get("solo_run_ids")).split(","):
        if run_id in solos:
            record, summary = solos[run_id]
            reason = busy_host(record, summary)
            if reason:
                found.append(f"{_name(record)}: {reason}")
    if not found or not _finite(inter.get("slowdown")):
        return None
    return Flag(_text(inter.get("run_id")), _name(inter), "slowdown", "busy-baseline",
                "its solo baseline ran on a busy host (" + "; ".join(found) + ")",
                "run the solo sheet again on an idle host (nothing else on its CPUs or GPU), "
                "or name a clean baseline with --baseline EXP")


def baseline_mismatch(inter: Mapping[str, object], run: Mapping[str, object] | None = None,
                      solos: Iterable[Mapping[str, object]] = ()) -> Flag | None:
    """Solo and co-located runs of different params, hosts or GPU models."""
    reasons = [_text(inter.get("baseline_mismatch"))] if _text(inter.get("baseline_mismatch")) else []
    if run is not None:
        gpu = _text(run.get(f"tag.{schema.GPU_NAMES}"))
        others = sorted({g for s in solos if (g := _text(s.get(f"tag.{schema.GPU_NAMES}"))) and g != gpu})
        if gpu and others:
            reasons.append(f"GPU differs: solo on {', '.join(others)}, co-located on {gpu}")
    if not reasons:
        return None
    return Flag(_text(inter.get("run_id")), _name(inter), "slowdown", "baseline-differs",
                "; ".join(reasons), "measure a solo run of the same script, params and host "
                "(docs/analysis.md, How baselines are found)")


def few_samples(record: Mapping[str, object], summary: Mapping[str, object]) -> Flag | None:
    """Fewer than MIN_SAMPLES readings in the run's span: its means are anecdotes."""
    count = _number(summary.get("samples"))
    if not math.isfinite(count) or count >= MIN_SAMPLES:
        return None
    span = _number(summary.get("duration_s"))
    over = f" over its {span:.3g} s span" if math.isfinite(span) else ""
    return Flag(_text(record.get("run_id")), _name(record), "samples", "few-samples",
                f"{count:.0f} reading(s){over}: its means and maxima rest on too few samples",
                "run it longer or sample more often (--interval / the sheet's Interval)")


def energy_interval(record: Mapping[str, object], summary: Mapping[str, object]) -> Flag | None:
    """The energy's 95 % interval over the threshold (radtrack/analysis/energy_columns.py:
    a bursty load near the sensor's period, or a span too short)."""
    note = _text(summary.get("energy_note"))
    if not note:
        return None
    return Flag(_text(record.get("run_id")), _name(record), "energy_j", "energy-interval", note,
                "read energy_j with its interval (energy_j_ci95_pct); a longer run or the "
                "energy counter narrows it (docs/analysis.md, Energy error bars)")


def counter_vs_power(record: Mapping[str, object], summary: Mapping[str, object]) -> Flag | None:
    """A GPU's energy counter and its integrated power (mean power x span) disagreeing by more
    than POWER_MISMATCH_PCT over a span of at least POWER_MISMATCH_MIN_S."""
    span = _number(summary.get("duration_s"))
    if not math.isfinite(span) or span < POWER_MISMATCH_MIN_S:
        return None
    found = []
    found_summaries = summaries(record)
    for total in found_summaries:
        # a device's energy from its cumulative counter (declared energy_counter), in J
        src = es.source(total.series) if total.meaning.stat == "total" else None
        counter = total.value
        if src is None or src.kind != "counter" or counter <= 0:
            continue
        # its instantaneous power's mean over the span (declared device_power, the same
        # device; the highest priority first), in W
        powers = sorted((x for x in found_summaries if x.device == total.device and x.meaning.stat == "mean"
                         and x.meaning.role == "device_power" and x.meaning.flavour == ""
                         and x.meaning.unit in es.POWER_UNITS),
                        key=lambda x: (-x.meaning.priority, x.series))
        if not powers:
            continue
        integrated = powers[0].value * es.POWER_UNITS[powers[0].meaning.unit] * span
        off = 100.0 * (integrated / counter - 1.0)
        if abs(off) > POWER_MISMATCH_PCT:
            found.append(f"{total.device}: counter {counter:.0f} J, mean power x span "
                         f"{integrated:.0f} J ({off:+.0f} %)")
    if not found:
        return None
    return Flag(_text(record.get("run_id")), _name(record), "energy_j", "counter-vs-power",
                "the energy counter and the integrated power disagree: " + "; ".join(found),
                "look at the power series for gaps or readings outside the run's span; trust the "
                "counter where the driver has one")


def _has_gpu_readings(record: Mapping[str, object], summary: Mapping[str, object]) -> bool:
    if any(_finite(summary.get(c)) for c in ("gpu_util_pct_mean", "power_w_mean", "gpu_energy_j",
                                              "proc_sm_util_pct_mean", "mem_used_mib_mean")):
        return True
    return any(x.meaning.scope in DEVICE_SCOPES for x in summaries(record))


def no_gpu_activity(record: Mapping[str, object], summary: Mapping[str, object]) -> Flag | None:
    """A GPU row (Devices set) that did nothing on a GPU: no GPU readings at all (no GPU on
    the host, or no GPU listener), or its own processes (else the device) idle throughout:
    the script most likely fell back to the CPU."""
    if not is_gpu_row(record):
        return None
    devices = _text(record.get("devices"))
    flag = (_text(record.get("run_id")), _name(record), "*", "no-gpu-activity")
    if not _has_gpu_readings(record, summary):
        state = _text(record.get(f"tag.{schema.listener_tag('smi')}"))
        why = (f"Devices={devices} but the run has no GPU readings"
               + (f" (smi listener: {state})" if state else " (no GPU listener ran)"))
        return Flag(*flag, why, "check the host has the GPU (nvidia-smi) and the row lists a GPU "
                               "listener (smi); the script may have run on the CPU")
    own_sm = _number(summary.get("proc_sm_util_pct_mean"))
    own_mem = _number(summary.get("proc_mem_used_mib_max"))
    device = _number(summary.get("gpu_util_pct_mean"))
    if math.isfinite(own_sm) or math.isfinite(own_mem):
        idle = (not math.isfinite(own_sm) or own_sm < IDLE_GPU_PCT) and \
               (not math.isfinite(own_mem) or own_mem <= 0)
        what = "its processes used no SMs and no GPU memory"
    else:
        idle = math.isfinite(device) and device < IDLE_GPU_PCT
        what = f"GPU utilisation {device:.2g} % throughout"
    if not idle:
        return None
    return Flag(*flag, f"Devices={devices} but {what}: the script most likely fell back to the CPU",
                "check the script's device choice (e.g. torch.cuda.is_available() in its log) and "
                "the CUDA install; its figures are a CPU run's")


def blank_reasons(record: Mapping[str, object], summary: Mapping[str, object]) -> dict[str, str]:
    """Why a run's energy and GPU columns are blank: column -> reason, for the columns that
    are (the page's tooltip, the report's legend)."""
    gpu_columns = [c for c in summary if isinstance(c, str) and (
        c in ("energy_j", "gpu_energy_j", "energy_j_ci95_pct", "co2e_g", "activity_energy_j")
        or c.startswith(("power_w", "gpu_util_pct", "sm_active_pct", "tensor_active_pct",
                         "mem_used_mib", "temp_c", "sm_clock_mhz", "proc_sm_util_pct",
                         "proc_mem_used_mib", "energy_per_")))]
    blank = [c for c in gpu_columns if not _finite(summary.get(c))]
    if not blank:
        return {}
    if not is_gpu_row(record):
        reason = "CPU-only run (no Devices): no GPU readings"
    elif not _has_gpu_readings(record, summary):
        state = _text(record.get(f"tag.{schema.listener_tag('smi')}"))
        reason = (f"GPU row without GPU readings (smi listener: {state})" if state
                  else "no GPU listener ran")
    else:
        reason = ""
    out = {c: reason for c in blank if reason}
    if not _finite(summary.get("energy_j")) and "energy_j" not in out:
        if _text(summary.get("attribution")) == "unattributed":
            out["energy_j"] = "co-located run recorded without co-location accounting"
        elif _finite(summary.get("gpu_energy_j")):
            out["energy_j"] = "no attributed share recorded for this run"
        else:
            out["energy_j"] = "no energy counter or power readings"
    return out


# Over tables ----------------------------------------------------------------------------

RUN_CHECKS = (few_samples, energy_interval, counter_vs_power, no_gpu_activity)


def run_checks(records: Iterable[Mapping[str, object]], summaries: pd.DataFrame,
               extra: pd.DataFrame | None = None) -> list[Flag]:
    """Every per-run check of ``records`` (load_runs rows), with their summaries (a
    summarize_runs frame, ``run_id`` keyed; ``extra`` more columns by ``run_id`` such as
    ``energy_note``), plus a busy host during a solo run."""
    table = summaries.set_index("run_id") if "run_id" in summaries else pd.DataFrame()
    if extra is not None and not extra.empty and len(table):
        table = table.join(extra.set_index("run_id")[[c for c in extra if c != "run_id"
                                                         and c not in table]], how="left")
    out: list[Flag] = []
    for record in records:
        run_id = _text(record.get("run_id"))
        summary = table.loc[run_id].to_dict() if run_id in table.index else {}
        out += [f for check in RUN_CHECKS if (f := check(record, summary)) is not None]
        if not _text(record.get(f"tag.{schema.COLOCATED_WITH}")) and (reason := busy_host(record, summary)):
            out.append(Flag(run_id, _name(record), "*", "busy-host",
                            f"the host was busy with other work during the run: {reason}",
                            "as a solo baseline it understates the run's speed: run it again on "
                            "an idle host"))
    return out


def interference_checks(inter: pd.DataFrame, records: Mapping[str, Mapping[str, object]],
                        summaries: pd.DataFrame) -> list[Flag]:
    """The checks of each co-located run's slowdown (an :func:`interference` table):
    faster than solo, busy baseline, baseline of other params, host or GPU. ``records``:
    run id -> load_runs row, for the runs and their solo runs."""
    table = summaries.set_index("run_id") if "run_id" in summaries else pd.DataFrame()
    out: list[Flag] = []
    for row in inter.to_dict("records"):
        ids = [i for i in _text(row.get("solo_run_ids")).split(",") if i]
        solos = {i: (records[i], table.loc[i].to_dict() if i in table.index else {})
                 for i in ids if i in records}
        checks = (faster_than_solo(row), busy_baseline(row, solos),
                  baseline_mismatch(row, records.get(_text(row.get("run_id"))),
                                    [records[i] for i in ids if i in records]))
        out += [f for f in checks if f is not None]
    return out


def flags_frame(flags: Iterable[Flag]) -> pd.DataFrame:
    """The flags as a table (:data:`CHECK_COLUMNS`), each once."""
    rows = list(dict.fromkeys(flags))
    return pd.DataFrame([asdict(f) for f in rows], columns=CHECK_COLUMNS)


def codes_by_run(flags: Iterable[Flag], figures: Iterable[str] | None = None) -> dict[str, str]:
    """run id -> its checks' short names, comma-separated (only those on ``figures``)."""
    wanted = None if figures is None else set(figures)
    out: dict[str, list[str]] = {}
    for f in flags:
        if wanted is None or f.figure in wanted:
            out.setdefault(f.run_id, [])
            if f.check not in out[f.run_id]:
                out[f.run_id].append(f.check)
    return {run: ",".join(codes) for run, codes in out.items()}
