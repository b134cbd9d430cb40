"""The user's own figures in ``radtrack report`` (issue 52), through one real launch: a
``RADTBenchmark`` script's logged ``loss`` and its ``epoch``/``eval`` windows, a script on a
RAPL tree whose ``busy`` window has an energy and an interval, and a script that makes its
own MLflow run; each beside the hardware summary of the same span, in text and json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mlflow import MlflowClient
from support import radtrack_cli, run_cli

TESTS = Path(__file__).resolve().parents[1]
SCRIPTS = TESTS / "scripts"
RAPL = TESTS / "data" / "rapl" / "server_2socket"


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("own")
    root = tmp / "powercap"
    shutil.copytree(RAPL, root)
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    rapl = (f"{root} {tmp / 'written.json'} --steps 60 --step-s 0.02 intel-rapl:0=60 "
            "intel-rapl:0:0=8")
    sheet = tmp / "own.csv"
    sheet.write_text(
        "Experiment,Workload,Devices,Collocation,File,Listeners,Params,Interval,RunName\n"
        f"own,1,-,-,{SCRIPTS / 'window_epochs.py'},top,--seconds 0.4,0.2,epochs\n"
        f"own,2,-,-,{TESTS / 'listeners' / 'rapl_windowed.py'},rapl,{rapl},0.1,rapl\n"
        f"own,3,-,-,{SCRIPTS / 'mlflow_code' / 'steady_trial.py'},top,--seconds 0.5,0.2,trial\n")
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(tmp / ".radtrack"),
           "RADTRACK_POWERCAP_ROOT": str(root), "RADTRACK_RAPL_EVERY_S": "0",
           "RADTRACK_WAIT_LISTENERS": "1"}
    radtrack_cli(str(sheet), cwd=tmp, env=env, check=True, timeout=300)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("own").experiment_id
    rows = {r.info.run_name: r for r in client.search_runs([exp])
            if r.data.tags.get("radtrack.role") == "row"}
    return {"uri": uri, "client": client, "rows": rows, "tmp": tmp}


def _report(launched, *args: str) -> str:
    """``radtrack report own ARGS`` through the CLI's entry point, in this process."""
    env = {"MLFLOW_TRACKING_URI": str(launched["uri"]),
           "RADTRACK_CACHE_DIR": str(Path(str(launched["tmp"])) / "cache")}
    return run_cli("report", "own", *args, env=env, check=True).stdout


def test_the_report_shows_what_the_scripts_measured(launched):
    client, rows = launched["client"], launched["rows"]
    doc = json.loads(_report(launched, "--format", "json"))
    runs = {r["run_name"]: r for r in doc["runs"]}
    own = {r["run_name"]: r for r in doc["own_metrics"]}
    windows = {(w["run_name"], w["window"]): w for w in doc["windows"]}

    # the RADTBenchmark script's loss, its last value, beside its span's hardware summary
    epochs = next(name for name in rows if name.endswith("epochs"))
    assert own[epochs]["loss"] == pytest.approx(1 / 3)
    assert own[epochs]["duration_s"] == pytest.approx(runs[epochs]["duration_s"])
    assert own[epochs]["proc_cpu_pct_mean"] == pytest.approx(runs[epochs]["proc_cpu_pct_mean"])
    # its windows: every occurrence stored, summed; their share of the run's span
    run_id = rows[epochs].info.run_id
    stored = [m.value for m in client.get_metric_history(run_id, "window/epoch/duration_s")]
    epoch = windows[(epochs, "epoch")]
    assert epoch["count"] == 3 == len(stored)
    assert epoch["duration_s"] == pytest.approx(sum(stored))
    assert epoch["share_of_span_pct"] == pytest.approx(sum(stored) / runs[epochs]["duration_s"] * 100)
    assert 0 < windows[(epochs, "eval")]["share_of_span_pct"] < epoch["share_of_span_pct"] < 100
    assert windows[(epochs, "warmup")]["count"] == 1

    # a window with an energy (RAPL: the host's CPU packages and DRAM) and its interval
    rapl = next(name for name in rows if name.endswith("rapl"))
    metrics = rows[rapl].data.metrics
    assert (rapl, "busy") in windows, (sorted(windows), sorted(k for k in metrics if "window" in k))
    busy = windows[(rapl, "busy")]
    assert busy["energy_j"] == pytest.approx(metrics["window/busy/energy_j"]) and busy["energy_j"] > 0
    assert busy["cpu_energy_j"] == pytest.approx(metrics["window/busy/cpu_energy_j"])
    # RAPL has no sensor model: its interval is unknown, stored as nothing and shown blank
    assert "window/busy/energy_j_ci95_pct" not in metrics and busy["energy_j_ci95_pct"] is None
    assert busy["share_of_energy_pct"] == pytest.approx(busy["energy_j"] / runs[rapl]["energy_j"] * 100)
    assert 20 < busy["share_of_energy_pct"] < 90  # the middle half of the script's steps

    # a script's own MLflow run: its metric beside its span's hardware
    trial = next(s for s in doc["scripts"] if s["row_run_name"].endswith("trial"))
    assert trial["done"] == 1.0 and trial["duration_s"] > 0

    text = _report(launched)
    own_text = text.split("The scripts' own metrics")[1].split("\n\n")[0]
    assert "loss" in own_text.splitlines()[1] and "0.333" in own_text
    assert "loss: the script's own metric, last value logged" in " ".join(own_text.split())
    windows_text = text.split("Code windows")[1].split("\n\n")[0]
    assert "epoch" in windows_text and "busy" in windows_text and "share_of_span_pct" in windows_text
    assert "Runs the scripts made" in text and "done" in text.split("Runs the scripts made")[1]


def test_a_windows_interval_combines_its_occurrences_as_independent_errors():
    """Two epochs of 10 J +-5 % and 30 J +-10 %: 40 J +-sqrt(0.5^2 + 3^2)/40 = 7.6 %; 25 % of
    the run's 160 J and of its 8-s span (1 s + 1 s)."""
    import pandas as pd

    from radtrack.analysis.report_own import windows_table

    runs = pd.DataFrame({"run_id": ["r"], "run_name": ["x-1 A"], "metric.window/epoch/duration_s": [1.0],
                         "metric.window/epoch/energy_j": [30.0],
                         "metric.window/epoch/energy_j_ci95_pct": [10.0]})
    summary = pd.DataFrame({"run_id": ["r"], "duration_s": [8.0], "energy_j": [160.0]})
    points = [("window/epoch/duration_s", 0, 1.0), ("window/epoch/duration_s", 1, 1.0),
              ("window/epoch/energy_j", 0, 10.0), ("window/epoch/energy_j", 1, 30.0),
              ("window/epoch/energy_j_ci95_pct", 0, 5.0), ("window/epoch/energy_j_ci95_pct", 1, 10.0)]
    asked: list[list[str]] = []

    def load(run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        asked.append(keys)
        return pd.DataFrame([{"run_id": "r", "metric": k, "step": s, "value": v} for k, s, v in points])

    row = windows_table(runs, summary, load).iloc[0]
    assert sorted(asked[0]) == sorted(c.removeprefix("metric.") for c in runs.columns if "/" in c)
    assert (row["window"], row["count"], row["duration_s"], row["energy_j"]) == ("epoch", 2, 2.0, 40.0)
    assert row["energy_j_ci95_pct"] == pytest.approx((0.5 ** 2 + 3.0 ** 2) ** 0.5 / 40 * 100)
    assert row["share_of_span_pct"] == pytest.approx(25.0) and row["share_of_energy_pct"] == pytest.approx(25.0)
