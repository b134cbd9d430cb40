"""Identical MPS:50 twins whose spans differ get the same J per unit (issue 51), through the
real CLI and launcher, a SQLite store, the MPS control double and NVML doubles in every
process (tests/doubles/nvml_scenario.py: NVML names only the MPS server under MPS, as the
H200 driver does).

On an H200 the solo-model gave MPS:50 twins 4.8 % apart in J per TFLOP
(benchmarks/results/h200-2026-11-29-fixed-cost): a twin whose span outlasts its partner's
with no work logged (its stop at MaxTime draining a GPU queue) was charged the GPU alone
for that tail, while its work (mean logged throughput x duration, the work the report
counts) counted the tail at its mean rate. Here one twin holds its run open 3 s after its
last log (JOB_LINGER): with the per-window weights alone the twins came 24 % apart with a 1.5-s hold;
radtrack/compute/split_model.py now fits per-run factors so that both are charged in
proportion to their serial energy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "doubles"))
import nvml_scenario  # noqa: E402
from fakehost import H100_UUID, FakeHost  # noqa: E402
from support import radtrack_cli, run_cli  # noqa: E402

JOB = Path(__file__).resolve().parents[1] / "scripts" / "shared_gpu_job.py"
HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params,Interval,Env\n"

pytestmark = pytest.mark.slow


def test_mps_twins_with_unequal_spans_get_the_same_energy_per_unit(store, tmp_path, monkeypatch):
    FakeHost(tmp_path, monkeypatch)
    env = nvml_scenario.write(tmp_path / "mps.json", [{
        "uuid": H100_UUID, "watts": 400.0, "mps_server_sm": 90,
        "procs": [{"match": "--tag a", "sm": 45, "mem_mib": 800}]}])
    row = "twins,{w},,,0,{c},{job},smi,--tag a --seconds 3,0.1,{env}\n"
    sheet = tmp_path / "twins.csv"
    sheet.write_text(HEADER + row.format(w=1, c="-", job=JOB, env="JOB_RATE=100")
                     + row.format(w=2, c="MPS:50", job=JOB, env="JOB_RATE=50")
                     + row.format(w=2, c="MPS:50", job=JOB, env='"JOB_RATE=50 JOB_LINGER=3"'))
    p = radtrack_cli(str(sheet), env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    client = MlflowClient(store)
    exp = client.get_experiment_by_name("twins")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    a, b = runs["twins-2 A"], runs["twins-2 B"]

    def per_unit(run) -> float:
        # the work the split and the report count: the mean logged throughput x the duration
        m = run.data.metrics
        history = client.get_metric_history(run.info.run_id, "throughput_samples_per_s")
        rate = sum(h.value for h in history) / len(history)
        return m["summary/attribution/gpu0/energy_j"] / (rate * m["summary/duration_s"])

    for twin in (a, b):
        assert twin.data.tags["radtrack.attribution.gpu0"] == "solo-model"
    # the lingering twin's span is longer by about its linger (its work counts it; start-up
    # on a loaded 2-core host moves either span by up to a second or so)
    assert b.data.metrics["summary/duration_s"] - a.data.metrics["summary/duration_s"] > 1.0
    assert per_unit(a) == pytest.approx(per_unit(b), rel=0.01)
    # the GPU's energy is still all accounted for, window by window
    parent = runs["twins-2"].data.metrics
    total = sum(t.data.metrics["summary/attribution/gpu0/energy_j"] for t in (a, b)) + \
        parent["summary/workload/gpu0/other_energy_j"] + parent["summary/workload/gpu0/idle_energy_j"]
    assert total == pytest.approx(parent["summary/workload/gpu0/energy_j"], rel=0.01)
    # each twin's interval holds its J per unit's change against its solo run (one solo
    # run: the H200's largest spread stands in for the baseline's error)
    solo = runs["twins-1 A"]
    for twin in (a, b):
        change = 100 * abs(per_unit(twin) / per_unit(solo) - 1)
        assert twin.data.metrics["summary/attribution/gpu0/energy_j_ci95_pct"] >= change

    # the user's own check: radtrack report --study attribution shows the twins' spread
    out = tmp_path / "study.csv"
    rep = run_cli("report", "twins", "--study", "attribution", "--format", "csv", "--out", str(out))
    assert rep.returncode == 0, rep.stderr[-2000:]
    import pandas as pd

    twins = pd.read_csv(tmp_path / "study.twins.csv")
    assert len(twins) == 1 and twins.loc[0, "rows"] == 2
    assert twins.loc[0, "energy_per_unit_spread_pct"] < 1.0
    assert twins.loc[0, "work_spread_pct"] > 20  # the longer span counts as more work
