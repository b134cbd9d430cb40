"""``radtrack report`` finds solo baselines in another experiment and names them (issue 38,
"Baselines found"), through the CLI: a sheet of solo rows recorded into one experiment,
then a sheet of the same script and params co-located in another, as examples/solo.csv and
examples/timeshare.csv are meant to be run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import radtrack_cli, report_here

from radtrack.analysis.text_table import WIDTH
from radtrack.compute.result_checks import MIN_SAMPLES

SCRIPTS = Path(__file__).parents[1] / "scripts"

SOLO = """# each row alone: the baselines
Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval
alone,1,,,,-,busy.py,top,1.5,0.2
alone,2,,,,-,busy.py,top,1,0.2
"""
PAIR = """# the same script and params, two side by side
Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval
pair,1,,,,-,busy.py,top,1.5,0.2
pair,1,,,,-,busy.py,top,1,0.2
pair,2,,,,-,busy.py,top,0.7,0.2
"""



def _runs(uri: str, experiment: str) -> dict[str, str]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    return {r.info.run_name: r.info.run_id for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get("radtrack.role") == "row"}


def test_report_finds_solo_runs_of_another_experiment_and_names_them(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(SCRIPTS / "busy.py", tmp_path / "busy.py")
    (tmp_path / "solo.csv").write_text(SOLO)
    (tmp_path / "pair.csv").write_text(PAIR)
    radtrack_cli(str(tmp_path / "solo.csv"), timeout=300, check=True)
    launched = radtrack_cli(str(tmp_path / "pair.csv"), timeout=300, check=True)
    solo, pair = _runs(store, "alone"), _runs(store, "pair")
    # the launcher's own stp line at the end of the co-located workload used them too
    assert "pair-1: stp" in launched.stderr, launched.stderr

    proc = report_here(monkeypatch, capsys, "pair")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert max(len(line) for line in text.splitlines()) <= WIDTH, text
    used = text.split("Baselines used:")[1].split("Co-located workloads")[0]
    # each co-located row names the solo run of its own params, in experiment 'alone'
    assert f"pair-1 A: alone-1 A ({solo['alone-1 A'][:8]}) in 'alone' (other experiment)" in used
    assert f"pair-1 B: alone-2 A ({solo['alone-2 A'][:8]}) in 'alone' (other experiment)" in used
    assert "STP" in text

    proc = report_here(monkeypatch, capsys, "pair", "--format", "json")
    doc = json.loads(proc.stdout)
    inter = {r["run_name"]: r for r in doc["interference"]}
    assert set(inter) == {"pair-1 A", "pair-1 B"}  # pair-2 A ran alone: no slowdown of its own
    assert inter["pair-1 A"]["solo_run_ids"] == solo["alone-1 A"]
    assert inter["pair-1 A"]["baseline_experiment"] == "alone"
    assert inter["pair-1 A"]["slowdown"] > 0 and inter["pair-1 A"]["slowdown_basis"] == "duration_s"
    assert doc["workloads"][0]["stp"] > 0
    runs = {r["run_name"]: r for r in doc["runs"]}
    # every run has a count (0: its listener ran and stored no series, on a loaded host)
    counts = {n: r["samples"] for n, r in runs.items()}
    assert set(runs) == set(pair) and all(c is not None and c >= 0 for c in counts.values()), counts
    # a run with fewer readings than MIN_SAMPLES is flagged, and only such a run
    few = {c["run_name"] for c in doc.get("checks", []) if c["check"] == "few-samples"}
    assert few == {n for n, r in runs.items() if r["samples"] < MIN_SAMPLES}

    # --baseline names the experiment to take them from: 'pair' has one solo run, of other
    # params, used and flagged as such; an experiment that does not exist is refused
    proc = report_here(monkeypatch, capsys, "pair", "--baseline", "pair", "--format", "json")
    doc = json.loads(proc.stdout)
    inter = {r["run_name"]: r for r in doc["interference"]}
    assert inter["pair-1 A"]["solo_run_ids"] == pair["pair-2 A"]
    assert inter["pair-1 A"]["baseline_mismatch"].startswith("params differ")
    flagged = {(c["run_name"], c["check"]) for c in doc["checks"]}
    assert ("pair-1 A", "baseline-differs") in flagged
    proc = report_here(monkeypatch, capsys, "pair", "--baseline", "nowhere")
    assert proc.returncode == 2 and "experiment 'nowhere' not found" in proc.stderr

    # --wide keeps the old one-line-per-row view
    wide = report_here(monkeypatch, capsys, "pair", "--wide").stdout
    assert any(len(line) > WIDTH for line in wide.splitlines())
