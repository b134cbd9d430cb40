"""Every run records what watching it cost (issue 25): a sheet through the real CLI, NVML
doubles with the driver's power sample ring in every process, a real SQLite store; the
``summary/monitoring/*`` metrics agree with what was stored, and ``radtrack report`` shows
them in its monitoring cost table."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import HAS_GPU, radtrack_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402

from radtrack.vocab import schema  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SHEET = ("Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval\n"
         "cost,1,,-,busy.py,smi+dcgm+top,2,0.1\n")


def test_a_run_records_its_monitoring_cost_and_the_report_shows_it(store: str, tmp_path: Path) -> None:
    env = nvml_scenario.write(tmp_path / "nvml.json", [
        {"uuid": "GPU-00000000-0000-0000-0000-000000000001", "watts": 300, "procs": [],
         "power_ring": True}])
    env["PATH"] = str(Path(sys.executable).parent) + ":/usr/bin:/bin"  # no dcgmi: NVML GPM
    _run_and_check(tmp_path, store, env)


@pytest.mark.gpu
def test_a_run_on_a_real_gpu_records_its_monitoring_cost(store: str, tmp_path: Path) -> None:
    """The same on a real GPU (H100: the driver's power ring, NVML GPM for dcgm)."""
    if not HAS_GPU:
        pytest.skip("gpu: no NVIDIA GPU/NVML on this host")
    _run_and_check(tmp_path, store, {})


def _run_and_check(tmp_path: Path, store: str, env: dict[str, str]) -> None:
    from mlflow import MlflowClient

    shutil.copy(SCRIPTS / "busy.py", tmp_path / "busy.py")
    (tmp_path / "sheet.csv").write_text(SHEET)
    p = radtrack_cli(str(tmp_path / "sheet.csv"), env=env, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    client = MlflowClient(store)
    (row,) = [r for r in client.search_runs([client.get_experiment_by_name("cost").experiment_id])
              if r.data.tags.get(schema.ROLE) == schema.ROLE_ROW]
    m = row.data.metrics
    assert row.data.tags["radtrack.listener.smi.sampler"].startswith("shared: smi+dcgm")
    for name in ("smi", "dcgm", "top"):
        assert m[schema.monitoring_key(name, "cpu_s")] > 0, name  # each listener's own share
        assert m[schema.monitoring_key(name, "missed")] == 0
    listeners = sum(m[schema.monitoring_key(n, "cpu_s")] for n in ("smi", "dcgm", "top"))
    assert abs(m[schema.MONITORING_LISTENERS_CPU] - listeners) < 1e-3
    assert m[schema.MONITORING_STORE_CPU] > 0 and m[schema.MONITORING_SPOOL_BYTES] > 0
    duration = m[schema.DURATION_KEY]
    # the launcher's whole process over the span (MLflow's import overlapping the script,
    # the intake): what the busy-host check counts as radtrack's own; mostly one thread
    assert 0 < m[schema.MONITORING_LAUNCHER_CPU] < duration * 2
    pct = 100 * (m[schema.MONITORING_LISTENERS_CPU] + m[schema.MONITORING_STORE_CPU]) / duration
    assert 0 < m[schema.MONITORING_CPU_PCT] < 100 and abs(m[schema.MONITORING_CPU_PCT] - pct) < 1
    # every point stored counted once: the store's listener rows are the points recorded
    db = sqlite3.connect(store.removeprefix("sqlite:///"))
    (stored,) = db.execute("SELECT COUNT(*) FROM metrics WHERE run_uuid = ? AND (key LIKE 'system/smi/%'"
                           " OR key LIKE 'system/dcgm/%' OR key LIKE 'system/top/%')",
                           (row.info.run_id,)).fetchone()
    assert stored == m[schema.MONITORING_POINTS] > 0
    # samples: every sample the listener gave (the driver's power samples, batch lines, one
    # each), its final readings after the run's end too; the trace holds those in the run's
    # span and a point at each end of it (radtrack/store/spans.py)
    trace = pd.read_parquet(client.download_artifacts(row.info.run_id, schema.trace_artifact("smi"),
                                                      str(tmp_path)))
    assert len(trace) - 2 <= m[schema.monitoring_key("smi", "samples")] <= len(trace) + 50
    ring = trace["smi/gpu0/power_sample_w"].dropna()
    assert len(ring) > 50 and ring.index.is_unique  # ~50 a second, each once

    rep = radtrack_cli("report", "cost", timeout=120)
    assert rep.returncode == 0, rep.stderr
    section = rep.stdout.split("Monitoring cost", 1)[1]
    assert "smi_cpu_s" in section and "dcgm_cpu_s" in section and "store_cpu_s" in section
    assert row.info.run_name in section
    out = tmp_path / "report.csv"
    assert radtrack_cli("report", "cost", "--format", "csv", "--out", str(out)).returncode == 0
    cost = pd.read_csv(out.with_name("report.monitoring.csv"))
    assert cost.loc[0, "points"] == stored
