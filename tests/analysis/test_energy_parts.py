"""The report's "Energy by part" table (radtrack/analysis/energy_parts.py): every device a run
measured, with its stored counter energy, and every power rail inside one, never counted in
the run's energy; shown only where a run has more than one part."""

from __future__ import annotations

import pandas as pd

from radtrack.analysis.energy_parts import energy_parts


def _run(run_id: str, **metrics: float) -> dict[str, object]:
    return {"run_id": run_id, "run_name": f"{run_id} A", **{f"metric.{k}": v for k, v in metrics.items()}}


def test_a_rapl_runs_packages_dram_and_rails_are_its_parts() -> None:
    runs = pd.DataFrame([_run(
        "cpu", **{"rapl/pkg0/energy_j": 100.0, "rapl/pkg0/dram/energy_j": 20.0, "rapl/pkg0/core/energy_j": 60.0,
                  "summary/rapl/pkg0/energy_j": 40.0, "summary/rapl/pkg0/dram/energy_j": 8.0,
                  "summary/rapl/pkg0/core/energy_j": 25.0, "summary/duration_s": 4.0})])
    table = energy_parts(runs)
    parts = dict(zip(table["part"], zip(table["energy_j"], table["in_energy_j"], strict=True), strict=True))
    counted = {p: e for p, (e, how) in parts.items() if how == "yes"}
    assert sorted(counted.values()) == [8.0, 40.0]  # the package and its DRAM
    rails = [(e, how) for e, how in parts.values() if how != "yes"]
    assert rails == [(25.0, "no: inside its device")]  # core: inside the package, not added
    assert all("energy" in p for p in parts)  # named by what the listener declares


def test_a_gpu_run_with_one_counter_gets_no_table_and_node_k_is_left_to_the_node_table() -> None:
    one = _run("gpu", **{"smi/gpu0/energy_j": 900.0, "summary/smi/gpu0/energy_j": 500.0,
                         "dcgm/gpu0/energy_j": 900.0, "summary/dcgm/gpu0/energy_j": 499.0,
                         "node1/smi/gpu0/energy_j": 800.0, "summary/node1/smi/gpu0/energy_j": 450.0})
    assert energy_parts(pd.DataFrame([one])).empty  # one GPU, one counter chosen (smi's)
