"""MLflow's own run page on a run radtrack recorded: listener series under "System metrics",
the script's loss under "Model metrics" (scripts/mlflow_ui_screenshot.py, which also makes
docs/img/mlflow-*.png)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.timeout(900)  # a workload, an MLflow server start and two page loads
def test_mlflow_run_page_files_radtrack_series_as_system_metrics(tmp_path: Path) -> None:
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("browser: /usr/bin/chromium is not installed")
    out = tmp_path / "img"
    out.mkdir()
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "mlflow_ui_screenshot.py"),
                        "--out", str(out), "--store", str(tmp_path / "store"), "--samples", "400"],
                       capture_output=True, text=True, timeout=840)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for name in ("mlflow-system-metrics.png", "mlflow-model-metrics.png"):
        assert (out / name).stat().st_size > 20_000
