"""Framework worker processes are the script too (docs/mlflow-code.md, "Every process of the
script").

Through the real CLI on CPU, into a real SQLite store, one sheet of two rows (one launch:
each costs seconds of MLflow start-up): joblib's loky backend running three trials on two
worker processes over two ``Parallel`` calls (loky starts its workers through its own
launcher, and the second call reuses a worker of the first), each trial its own MLflow run;
and ``accelerate launch`` with two processes talking gloo, whose main process logs its run.
Every such run gets the telemetry of its own span, both links to the row run and the row's
experiment, and the report lists it under its row.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import radtrack_cli, report_here
from synthetic import new_store
from test_mlflow_code import Store

pytest.importorskip("joblib")
pytest.importorskip("accelerate")
# three processes importing torch and accelerate, three importing MLflow: a minute or two
# on a loaded 2-core host
pytestmark = pytest.mark.timeout(900)
SCRIPTS = Path(__file__).parents[1] / "scripts" / "frameworks"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval\n"
ROWS = ("loky_trials.py", "accelerate_job.py")


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, subprocess.CompletedProcess[str]]:
    """Row 1: loky trials; row 2: ``accelerate launch``; in a store that exists already."""
    folder = tmp_path_factory.mktemp("workers")
    uri = new_store(folder)
    sheet = folder / "sheet.csv"
    sheet.write_text(HEADER + "".join(f"fw,{i},,,,-,{SCRIPTS / f},top,,0.1\n"
                                      for i, f in enumerate(ROWS, 1)))
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(folder / ".radtrack"),
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = radtrack_cli(str(sheet), cwd=folder, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return Store(uri), proc


def bound_runs(s: Store, row: Any) -> dict[str, Any]:
    return {r.info.run_name: r for r in s.runs if r.data.tags.get("radtrack.row_run") == row.info.run_id}


def assert_bound(s: Store, run: Any, row: Any) -> None:
    """Its own span's series, summaries and traces, both links, the row's experiment."""
    s.assert_bound(run, row)
    proc = s.system(run, "system/top/proc/cpu_pct")
    assert proc and min(m.timestamp for m in proc) >= run.info.start_time
    assert run.info.status == "FINISHED"
    assert s.experiment(run) == "fw"


def test_every_loky_trial_run_is_bound_in_fresh_and_reused_workers(workers: tuple[Store, Any]) -> None:
    s, proc = workers
    row = s.named("fw-1 A")
    assert row.info.status == "FINISHED"
    runs = bound_runs(s, row)
    assert set(runs) == {"loky-0", "loky-1", "loky-2"}, proc.stderr[-3000:]
    for i, run in runs.items():
        assert_bound(s, run, row)
        score = s.c.get_metric_history(run.info.run_id, "score")
        assert sorted(m.value for m in score) == pytest.approx([int(i[-1]) + k / 10 for k in range(3)])
    # the trials ran in loky's workers, not in the script, and the second call's worker is
    # one of the first call's: the hook is in a reused worker, and its later run is bound
    main, *pids = (int(p) for p in next(ln for ln in proc.stdout.splitlines()
                                        if ln.startswith("loky pids")).split()[2:])
    assert main not in pids and len(set(pids[:2])) == 2, pids
    assert pids[2] in pids[:2], f"loky started a new worker for the second call: {pids}"
    (line,) = [ln for ln in proc.stderr.splitlines() if "telemetry bound" in ln and "loky-" in ln]
    assert set(line.split("run(s): ")[1].split(", ")) == set(runs), line


def test_accelerate_launch_main_process_run_is_bound(workers: tuple[Store, Any]) -> None:
    s, proc = workers
    row = s.named("fw-2 A")
    assert row.info.status == "FINISHED" and row.data.tags["radtrack.exit_code"] == "0"
    runs = bound_runs(s, row)
    assert set(runs) == {"accelerate-main"}, proc.stderr[-3000:]
    run = runs["accelerate-main"]
    assert_bound(s, run, row)
    assert run.data.tags["radtrack.rank"] == "0" and run.data.params["world"] == "2"
    # the gloo all-reduce of the two processes' ones: they really talked, every step logged
    assert [m.value for m in s.c.get_metric_history(run.info.run_id, "sum")] == [2.0] * 8
    assert "telemetry bound to the script's run(s): accelerate-main" in proc.stderr


def test_no_worker_run_lands_in_default_and_the_report_lists_them(
        workers: tuple[Store, Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    s, _ = workers
    assert {s.experiment(r) for r in s.runs} == {"fw"}
    rep = report_here(monkeypatch, capsys, "fw", "--format", "json", "--tracking-uri", s.uri)
    assert rep.returncode == 0, rep.stderr[-3000:]
    listed = {(r["run_name"], r["row_run_name"]) for r in json.loads(rep.stdout)["scripts"]}
    assert listed == {("loky-0", "fw-1 A"), ("loky-1", "fw-1 A"), ("loky-2", "fw-1 A"),
                      ("accelerate-main", "fw-2 A")}
