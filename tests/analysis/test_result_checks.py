"""Checks on the results (issue 38): ``radtrack report`` flags, next to the figure and in
its Checks section, results that cannot be trusted as they stand; stored the way the
launcher stores runs (tests/analysis/test_analysis_seed.py), read through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import made_store, report_here
from test_analysis_seed import T0, Row, seed_workload

from radtrack.analysis.text_table import WIDTH
from radtrack.compute import result_checks as rc
from radtrack.compute.variability import ratio_interval


def _series(value: float, seconds: int) -> list[tuple[float, int, float]]:
    return [(float(s), s, value) for s in range(seconds + 1)]


def _busy_host(seconds: int) -> dict[str, list[tuple[float, int, float]]]:
    """top's readings of a 2-core host at 95 % while the run's own processes used 20 % of
    one core: others loaded the host."""
    return {"top/cpu_pct": _series(95.0, seconds), "top/proc/cpu_pct": _series(20.0, seconds),
            "top/cpu0/util_pct": _series(95.0, seconds), "top/cpu1/util_pct": _series(95.0, seconds)}


@pytest.fixture
def flagged(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    monkeypatch.setenv("RADTRACK_CACHE_DIR", str(tmp_path / "cache"))
    client = MlflowClient(made_store(store))
    # the baseline, in another experiment, taken while other work loaded the host
    solo = seed_workload(client, "base", 1, [Row(duration_s=30, throughput=None, extra=_busy_host(30))])
    # co-located in half the solo time: faster than solo
    own = {"top/cpu_pct": _series(50.0, 15), "top/proc/cpu_pct": _series(90.0, 15),
           "top/cpu0/util_pct": _series(50.0, 15), "top/cpu1/util_pct": _series(50.0, 15)}
    pair = seed_workload(client, "coloc", 1, [Row(duration_s=15, throughput=None, collocation="-", extra=own),
                                              Row(duration_s=15, throughput=None, collocation="-")],
                         start=T0 + 100)
    # GPU rows: one whose GPU stayed idle, one with no GPU readings at all (a CPU host)
    idle = seed_workload(client, "coloc", 2, [Row(duration_s=30, util_pct=0.0, throughput=None,
                                                  params={"batch-size": "8"})], start=T0 + 200)
    no_gpu = seed_workload(client, "coloc", 3, [Row(duration_s=30, devices="3", parquet=False, history=False,
                                                    energy_counter=False, throughput=None,
                                                    params={"batch-size": "9"})], start=T0 + 300)
    # a CPU-only row (no Devices): blank energy, said why; and one counter far from its power
    cpu = seed_workload(client, "coloc", 4, [Row(duration_s=30, devices="-", parquet=False, history=False,
                                                 energy_counter=False, throughput=None,
                                                 params={"batch-size": "10"})], start=T0 + 400)
    off = seed_workload(client, "coloc", 5, [Row(duration_s=30, throughput=None, summaries=True,
                                                 params={"batch-size": "11"},
                                                 extra={"summary/smi/gpu0/power_w/mean": [(31.0, 1, 400.0)]})],
                        start=T0 + 500)
    return {"solo": solo, "pair": pair, "idle": idle, "no_gpu": no_gpu, "cpu": cpu, "off": off}


def test_report_flags_what_cannot_be_trusted(flagged, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    proc = report_here(monkeypatch, capsys, "coloc", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    checks = {(c["run_name"], c["check"]): c for c in doc["checks"]}
    for name in ("coloc-1 A", "coloc-1 B"):
        fast = checks[(name, "faster-than-solo")]
        assert fast["figure"] == "slowdown" and "slowdown 0.5" in fast["why"] and fast["todo"]
        busy = checks[(name, "busy-baseline")]
        assert "base-1 A" in busy["why"] and "host CPU 95 %" in busy["why"] and "idle host" in busy["todo"]
    idle = checks[("coloc-2 A", "no-gpu-activity")]
    assert "Devices=0" in idle["why"] and "fell back to the CPU" in idle["why"]
    none = checks[("coloc-3 A", "no-gpu-activity")]
    assert "Devices=3" in none["why"] and "no GPU readings" in none["why"]
    assert "counter 6000 J, mean power x span 12000 J (+100 %)" in \
        checks[("coloc-5 A", "counter-vs-power")]["why"]
    # nothing else is flagged: a CPU-only row is not a GPU row, the pair's GPUs were busy
    assert set(checks) == {("coloc-1 A", "faster-than-solo"), ("coloc-1 B", "faster-than-solo"),
                           ("coloc-1 A", "busy-baseline"), ("coloc-1 B", "busy-baseline"),
                           ("coloc-2 A", "no-gpu-activity"), ("coloc-3 A", "no-gpu-activity"),
                           ("coloc-5 A", "counter-vs-power")}
    runs = {r["run_name"]: r for r in doc["runs"]}
    assert runs["coloc-1 A"]["checks"] == "faster-than-solo,busy-baseline"
    inter = {r["run_name"]: r for r in doc["interference"]}
    assert inter["coloc-1 A"]["checks"] == "faster-than-solo,busy-baseline"
    assert inter["coloc-1 A"]["solo_runs"].endswith("in 'base'")

    text = report_here(monkeypatch, capsys, "coloc").stdout
    assert max(len(line) for line in text.splitlines()) <= WIDTH, text
    flags = " ".join(text.split("Checks (7)")[1].split())
    assert "- coloc-1 A [slowdown] faster-than-solo: slowdown 0.5" in flags
    assert "Do: run the solo sheet again on an idle host" in flags
    # the '-' cells say why: the CPU-only row, the GPU row without GPU readings
    legend = " ".join(text.split("'-': no value.")[1].split("Co-location interference")[0].split())
    assert "CPU-only run (no Devices): no GPU readings (coloc-4 A)" in legend
    assert "GPU row without GPU readings (smi listener: ok) (coloc-3 A)" in legend
    # host CPU is labelled as the host's, next to the run's own
    assert "cpu_pct_mean: host CPU, mean (% of all cores)" in " ".join(text.split())


def test_slowdown_interval_from_repeats() -> None:
    # 4 solo repeats with a 2 % CV: a slowdown of 0.9 is beyond noise, 0.99 is not
    lo, hi = ratio_interval(0.9, (4, 0.02), (0, math.nan), 4)
    assert lo < 0.9 < hi < 1.0
    assert rc.faster_than_solo({"run_id": "r", "run_name": "a", "slowdown": 0.9,
                                "slowdown_lo": lo, "slowdown_hi": hi}) is not None
    lo, hi = ratio_interval(0.99, (4, 0.02), (0, math.nan), 4)
    assert hi > 1.0
    assert rc.faster_than_solo({"run_id": "r", "run_name": "a", "slowdown": 0.99,
                                "slowdown_lo": lo, "slowdown_hi": hi}) is None
    # no repeats: no interval, the noise floor decides
    assert ratio_interval(0.9, (1, math.nan), (1, math.nan), 1) == pytest.approx((math.nan,) * 2,
                                                                                nan_ok=True)
    assert rc.faster_than_solo({"run_id": "r", "slowdown": 0.97}) is None
    assert rc.faster_than_solo({"run_id": "r", "slowdown": 0.9}).check == "faster-than-solo"


def test_busy_host_counts_the_runs_own_cpu_out() -> None:
    cores = {"metric.top/cpu0/util_pct": 90.0, "metric.top/cpu1/util_pct": 90.0}
    # a CPU-bound script on both cores of an otherwise idle host is not a busy host
    assert rc.busy_host(cores, {"cpu_pct_mean": 95.0, "proc_cpu_pct_mean": 190.0}) is None
    assert "not the run's own" in rc.busy_host(cores, {"cpu_pct_mean": 95.0, "proc_cpu_pct_mean": 20.0})
    # a short run: the launcher's MLflow import and the listeners (radtrack's own, 70 % of a
    # core over the 4-s span) are not the host's other work; without them it would be
    ours = {**cores, "metric.summary/duration_s": 4.0, "metric.summary/monitoring/launcher_cpu_s": 2.4,
            "metric.summary/monitoring/listeners_cpu_s": 0.4}
    assert rc.busy_host(ours, {"cpu_pct_mean": 55.0, "proc_cpu_pct_mean": 20.0}) is None
    assert "not the run's own" in rc.busy_host(cores, {"cpu_pct_mean": 55.0, "proc_cpu_pct_mean": 20.0})
    # another process on the run's GPU
    gpu = {"metric.summary/smi/gpu0/all_procs_sm_util_pct/mean": 60.0,
           "metric.summary/smi/gpu0/proc_sm_util_pct/mean": 30.0}
    assert "other processes used 30 % of gpu0's SMs" in rc.busy_host(gpu, {})
