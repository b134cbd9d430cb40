"""radT scripts and launcher flags, unchanged, through the real CLI (docs/radt-migration.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mlflow import MlflowClient
from support import radtrack_cli

SCRIPTS = Path(__file__).parent / "scripts"
RADT_SCRIPT = SCRIPTS / "radt_style.py"
ALIAS_LINE = "radt: compatibility alias: radt.run.RADTBenchmark is radtrack.RADTBenchmark"


def _rows(uri: str, experiment: str):
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment} not created"
    runs = c.search_runs([exp.experiment_id])
    return c, [r for r in runs if r.data.tags.get("radtrack.role") == "row"]


def test_radt_script_logs_into_the_launchers_run_with_radt_flags(store: str, tmp_path: Path) -> None:
    # radT's own spelling: -i/--epoch (max epochs), -t/--time (minutes), --local
    p = radtrack_cli("-e", "radt", "-i", "3", "-t", "5", "--local", "-l", "none",
                     str(RADT_SCRIPT), "--batch-size", "16", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count(ALIAS_LINE) == 1
    c, rows = _rows(store, "radt")
    assert len(rows) == 1
    run = rows[0]
    assert run.info.status == "FINISHED"
    assert run.data.params["max_epoch"] == "3" and run.data.params["max_time"] == "5.0"
    assert run.data.params["batch-size"] == "16"
    assert run.data.tags["radtrack.stopped_by"] == "max_epoch"
    history = c.get_metric_history(run.info.run_id, "Metric A")
    assert sorted((h.step, h.value) for h in history) == [(0, 0.0), (1, 0.5), (2, 1.0), (3, 1.5)]
    # the limit stops the script at the first metric of epoch 3: loss was last logged at 2
    assert run.data.metrics["loss"] == 1 / 3
    assert "radt_style done" not in p.stdout  # stopped at epoch 3 by -i 3
    arts = {a.path for a in c.list_artifacts(run.info.run_id)}
    assert "radt_notes.txt" in arts


def test_long_radt_flags_and_rerun(store: str, tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                     f"longflags,1,FAILED,,,-,{RADT_SCRIPT},none,--epochs 4\n")
    skipped = radtrack_cli("--epoch", "1", "--time", "2", str(sheet), cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert "FAILED before, skipped (use --rerun to run it again)" in skipped.stderr
    assert "FAILED" in sheet.read_text()
    again = radtrack_cli("-r", "--epoch", "1", "--time", "2", str(sheet), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "running it again (--rerun)" in again.stderr
    _, rows = _rows(store, "longflags")
    assert len(rows) == 1 and rows[0].info.status == "FINISHED"
    assert rows[0].data.params["max_epoch"] == "1" and rows[0].data.params["max_time"] == "2.0"
    assert sheet.read_text().splitlines()[1].split(",")[2].startswith("FINISHED")


def test_conda_is_refused_with_what_to_do_instead(store: str, tmp_path: Path) -> None:
    p = radtrack_cli("--conda", "-l", "none", str(RADT_SCRIPT), cwd=tmp_path)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "--conda: per-run conda environments are not supported" in lines[0]
    assert "conda activate" in lines[0]
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "radt_notes.txt").exists()


def test_radt_script_without_radtrack_is_a_noop(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RADTRACK_", "MLFLOW_RUN"))}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'never.db'}"
    p = subprocess.run([sys.executable, str(RADT_SCRIPT), "--epochs", "2"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "radt_style done" in p.stdout
    assert p.stderr.strip() == ALIAS_LINE + " (docs/radt-migration.md)"
    assert not (tmp_path / "never.db").exists() and not (tmp_path / "mlruns").exists()


def test_nothing_in_radtrack_depends_on_the_alias() -> None:
    repo = Path(__file__).resolve().parent.parent
    users = []
    for folder in ("radtrack", "workloads", "examples", "benchmarks"):
        for path in (repo / folder).rglob("*.py"):
            text = path.read_text()
            if re.search(r"^\s*(import radt\b|from radt\b)", text, re.MULTILINE):
                users.append(str(path.relative_to(repo)))
    assert users == []
