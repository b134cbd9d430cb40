"""On a GPU: Lightning's MLFlowLogger and HF's Trainer under ``radtrack -l smi+top``, each
run the framework made holding its own metrics and the GPU's power of its own span."""

from __future__ import annotations

import pytest
from test_mlflow_code import Store, run_frameworks

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_frameworks(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return run_frameworks(tmp_path_factory.mktemp("gpu-frameworks"), listeners="smi+top",
                          devices="0", env={"EPOCHS": "20", "STEPS": "200"})


@pytest.mark.parametrize(("workload", "name", "metric"), [(1, "pl-tiny", "train_loss"),
                                                           (2, "hf-tiny", "loss")])
def test_framework_run_gets_gpu_power_of_its_span(gpu_frameworks: Store, workload: int, name: str,
                                                  metric: str) -> None:
    s = gpu_frameworks
    row, run = s.row(workload), s.named(name)
    assert run.info.status == "FINISHED"
    assert s.c.get_metric_history(run.info.run_id, metric)
    s.assert_bound(run, row)
    power = s.system(run, "system/smi/gpu0/power_w")
    assert power and all(p.value > 0 for p in power)
    assert min(p.timestamp for p in power) >= run.info.start_time
    assert run.data.metrics["summary/smi/gpu0/power_w/mean"] > 0
    assert run.data.tags["radtrack.listener.smi"] == "ok"
