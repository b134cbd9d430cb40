"""On a real NVIDIA GPU: summaries and interference of sgemm runs recorded with smi."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import REPO, radtrack_cli

from radtrack.analysis import load_runs, load_series, summarize_runs
from radtrack.compute.interference import interference
from radtrack.compute.summary import integrate_energy

pytestmark = pytest.mark.gpu

SHEET = """Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval
gpuan,1,,,0,-,{sgemm},smi,--steps 3000 --size 4096 --log-every 500,0.1
gpuan,2,,,0,-,{sgemm},smi,--steps 3000 --size 4096 --log-every 500,0.1
gpuan,2,,,0,-,{sgemm},smi,--steps 3000 --size 4096 --log-every 500,0.1
"""


def test_energy_power_and_interference_on_a_gpu(store: str, tmp_path: Path) -> None:
    sheet = tmp_path / "gpuan.csv"
    sheet.write_text(SHEET.format(sgemm=REPO / "workloads" / "sgemm.py"))
    p = radtrack_cli(str(sheet), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    runs = load_runs("gpuan")
    assert len(runs) == 3 and set(runs["status"]) == {"FINISHED"}
    summary = summarize_runs(runs).set_index("run_id")
    assert (summary["power_w_mean"] > 20).all()  # an H100 idles near 70 W
    assert (summary["power_w_max"] >= summary["power_w_mean"]).all()
    assert (summary["gpu_util_pct_max"] > 50).all()
    assert (summary["mem_used_mib_max"] > 3 * 64).all()  # three 4096^2 fp32 matrices
    assert (summary["throughput_tflops_mean"] > 1).all()
    assert (summary["energy_per_tflop_j"] > 0).all()

    for run_id in runs["run_id"]:
        series = load_series([run_id], metrics=["smi/gpu0/power_w", "smi/gpu0/energy_j"])
        power = series[series["metric"] == "smi/gpu0/power_w"]
        counter = summary.loc[run_id, "gpu_energy_j"]  # the whole GPU over the listener's span
        # The hardware counter and sampled power must tell the same story.
        assert counter == pytest.approx(integrate_energy(power["seconds"], power["value"]), rel=0.25)
        recorded = runs.set_index("run_id").loc[run_id, "metric.summary/smi/gpu0/energy_j"]
        assert counter == pytest.approx(recorded, rel=1e-6)  # same as the sink's summary

        # charged: the whole GPU over the run's own span when alone, about half when shared
        charged = summary.loc[run_id, "energy_j"]
        share = charged / counter
        assert (0.97 < share <= 1.0) if summary.loc[run_id, "attribution"] == "solo" else (0.3 < share < 0.7)

    table = interference(runs, summary.reset_index())
    assert len(table) == 2 and (table["slowdown_basis"] == "throughput_tflops").all()
    # two sgemm streams time-sharing one GPU each get well under the solo rate
    assert (table["slowdown"] > 1.2).all()
    assert (table["work_unit"] == "tflop").all()
