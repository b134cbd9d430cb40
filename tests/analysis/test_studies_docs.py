"""benchmarks/studies_docs.py: docs/studies pages from returned tables, with the GPU, driver
and date read from the files and the finding decided by the stated rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "studies_docs.py"


def _module():
    spec = importlib.util.spec_from_file_location("studies_docs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_pages_carry_host_tables_chart_and_finding(tmp_path):
    out, docs = tmp_path / "out", tmp_path / "docs"
    out.mkdir()
    (out / "gpu.txt").write_text("NVIDIA H100 80GB HBM3, 580.159.04\n2026-11-23\n")
    pd.DataFrame({"workload": [1, 2], "configuration": ["solo", "time-shared x2"],
                  "copies": [1, 2], "power_w_mean": [600.0, 540.0],
                  "sm_clock_mhz_mean": [1755.0, 1755.0]}).to_csv(out / "power-variation.csv",
                                                                  index=False)
    (out / "power-variation.png").write_bytes(b"\x89PNG fake")
    pd.DataFrame({"script": ["resnet", "cifar_cnn"], "dtype": ["bf16", "fp32"],
                  "gpu_util_pct": [95.0, 30.0], "sm_active_pct": [60.0, 1.0],
                  "tensor_active_pct": [20.0, 0.0], "util_over_sm_active": [95 / 60, 30.0]}
                 ).to_csv(out / "multi-level-utilisation.csv", index=False)
    assert _module().main([str(out), "--docs", str(docs)]) == 0
    page = (docs / "power-variation.md").read_text()
    assert page.startswith("# power-variation: measured on an NVIDIA H100 80GB HBM3")
    assert "driver 580.159.04, 2026-11-23" in page
    assert "time-shared x2 -10.0 %" in page and "**Reproduced.**" in page
    assert "| 1 | solo | 1 |" in page
    assert (docs / "img" / "power-variation.png").read_bytes() == b"\x89PNG fake"
    levels = (docs / "multi-level-utilisation.md").read_text()
    assert "It does for 2 of 2 runs" in levels and "cifar_cnn 1.0 %" in levels
    # nothing came back for a study: the page says so rather than inventing numbers
    assert "Not measured: the table did not come back." in (docs / "time-to-accuracy.md").read_text()
    assert "(no chart: neither a PNG nor the store came back)" in (docs / "host-gpu-eda.md").read_text()
