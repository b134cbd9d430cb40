"""Fault: a spool file torn and corrupted on disk before ``radtrack sync`` (docs/
architecture.md "Faults"): the launch ran with its server down, so everything spooled; then
a listener's spool gets a line cut mid-way and a line of garbage. Sync skips those two lines
and stores every other sample, the run FINISHED as its script ended."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cli_here, radtrack_cli


def test_sync_skips_a_torn_and_a_garbage_line_and_stores_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from mlflow import MlflowClient

    from radtrack.store.recovery import read_spool

    home = tmp_path / "home"
    monkeypatch.setenv("RADTRACK_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text("import time\ntime.sleep(1.5)\nprint('ran')\n")
    p = radtrack_cli("--tracking-uri", "http://127.0.0.1:9", "-e", "torn", "-l", "top",
                     "--interval", "0.1", str(tmp_path / "s.py"), cwd=tmp_path,
                     env={"RADTRACK_HOME": str(home), "RADTRACK_STORE_WAIT_S": "1"})
    assert p.returncode == 0 and "ran" in p.stdout, p.stderr
    (spool,) = home.glob("spool/*/top.jsonl")
    lines = spool.read_text().splitlines(keepends=True)
    # a line cut mid-way (a crash while writing) before the last, and one of garbage
    spool.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2] + "\n"
                     + "\x00\x00not json{{\n")
    kept = read_spool(spool)["top/proc/cpu_pct"].notna().sum()  # what is still whole
    assert kept >= 5
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = cli_here(monkeypatch, capsys, "sync", "--tracking-uri", uri)
    assert done.returncode == 0, done.stdout + done.stderr
    c = MlflowClient(uri)
    (run,) = [r for r in c.search_runs([c.get_experiment_by_name("torn").experiment_id])
              if r.data.tags.get("radtrack.role") == "row"]
    assert run.info.status == "FINISHED"
    stored = c.get_metric_history(run.info.run_id, "system/top/proc/cpu_pct")
    assert len(stored) >= kept - 1  # every whole sample (the span may cut a final one)
    assert "ran" in (Path(c.download_artifacts(run.info.run_id, "logs")) / "output.log").read_text()
