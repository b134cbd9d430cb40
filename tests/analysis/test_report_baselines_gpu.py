"""On a real NVIDIA GPU (issue 38): the example sheets' way of working, solo rows recorded
into one experiment and the same rows time-shared in another, gives slowdowns whose solo
runs ``radtrack report`` names, and a GPU row whose script ran on the CPU is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import REPO, radtrack_cli

pytestmark = pytest.mark.gpu

SGEMM = REPO / "workloads" / "sgemm.py"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval"
PARAMS = "--size 4096 --steps 3000 --log-every 100"  # ~8 s alone on an H100


def test_solo_then_timeshared_sheet_gives_named_baselines_and_flags_a_cpu_fallback(
        store: str, tmp_path: Path) -> None:
    solo = tmp_path / "solo.csv"
    solo.write_text("\n".join([
        HEADER,
        f"gsolo,1,,,0,-,{SGEMM},smi+top,{PARAMS},0.1",
        # asks for GPU 0, computes on the CPU: the script's fallback the check must catch
        f"gsolo,2,,,0,-,{SGEMM},smi+top,--device cpu --size 256 --steps 40 --log-every 10,0.1",
    ]) + "\n")
    share = tmp_path / "share.csv"
    share.write_text("\n".join([HEADER, f"gshare,1,,,0,-,{SGEMM},smi+top,{PARAMS},0.1",
                                f"gshare,1,,,0,-,{SGEMM},smi+top,{PARAMS},0.1"]) + "\n")
    for sheet in (solo, share):
        p = radtrack_cli(str(sheet), timeout=600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    # the launcher's stp line already found the baseline in the other experiment
    assert "gshare-1: stp" in p.stderr, p.stderr[-3000:]

    rep = radtrack_cli("report", "gshare", "--format", "json")
    assert rep.returncode == 0, rep.stderr[-2000:]
    doc = json.loads(rep.stdout)
    inter = {r["run_name"]: r for r in doc["interference"]}
    assert set(inter) == {"gshare-1 A", "gshare-1 B"}
    for row in inter.values():
        assert row["baseline_experiment"] == "gsolo" and row["solo_runs"].startswith("gsolo-1 A (")
        assert row["slowdown_basis"] == "throughput_tflops"
        assert row["slowdown"] > 1.2, row  # two GEMMs time-sliced on one GPU: each slower
    assert doc["workloads"][0]["stp"] > 0
    checks = {(c["run_name"], c["check"]) for c in doc.get("checks", [])}
    assert not {c for c in checks if c[1] in ("no-gpu-activity", "faster-than-solo")}, checks
    text = radtrack_cli("report", "gshare").stdout
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "gshare-1 A: gsolo-1 A (" in text

    rep = radtrack_cli("report", "gsolo", "--format", "json")
    doc = json.loads(rep.stdout)
    flagged = {c["run_name"]: c for c in doc.get("checks", []) if c["check"] == "no-gpu-activity"}
    assert set(flagged) == {"gsolo-2 A"}, doc.get("checks")
    assert "fell back to the CPU" in flagged["gsolo-2 A"]["why"]
