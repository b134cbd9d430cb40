"""``radtrack export``: the wide, time-aligned table, through the real CLI on real SQLite stores.

A known series (hand-made run: exact timestamps, Parquet traces with a power level, an
energy counter and top's two CPU figures) checks the resampling rule value by value and what
each column says it is; a run recorded by the launcher checks that the long rows of
load_series and the wide table agree value for value. One store serves the module (each
``radtrack`` process costs seconds of MLflow start-up): the known run's two exports are made
once and read by two tests.
"""

from __future__ import annotations

import math
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric
from support import made_store, radtrack_cli, run_cli

from radtrack.analysis import load_series
from radtrack.export import is_counter, parse_every, resample
from radtrack.vocab.meaning import column_row

SCRIPTS = Path(__file__).resolve().parent / "scripts"
START = 1_700_000_000.0  # unix seconds


def _known_run(uri: str, tmp_path: Path) -> str:
    """Experiment 'known': one row run with exact timestamps, a param, the script's own metric
    and two Parquet traces: smi's power (a level) and energy (a counter), and top's host CPU
    (% of all cores) next to the run's (% of one core), which share a unit symbol."""
    client = MlflowClient(made_store(uri))
    exp = client.create_experiment("known")
    run = client.create_run(exp, start_time=int(START * 1000), run_name="known-1 A", tags={
        "radtrack.role": "row", "radtrack.workload": "1", "radtrack.letter": "A",
        "radtrack.collocation": "-", "radtrack.devices": "0"})
    run_id = run.info.run_id
    client.log_param(run_id, "batch-size", "32")
    # the script's own metric: two points in second 0, one in second 1, none in 2, one in 3
    points = [(0.2, 10.0), (0.7, 20.0), (1.1, 30.0), (3.5, 50.0)]
    client.log_batch(run_id, metrics=[Metric("throughput_samples_per_s", v, int((START + t) * 1000), i)
                                      for i, (t, v) in enumerate(points)])
    # listener traces: power (a level) and the energy counter, every 0.5 s for 4 s; top's two CPUs
    t = START + np.arange(0.0, 4.0, 0.5)
    step = np.arange(len(t), dtype="int64")
    traces = {"smi": {"smi/gpu0/power_w": [100, 200, 300, 300, 300, 100, 100, 500.0],
                      "smi/gpu0/energy_j": np.cumsum([0, 75, 125, 150, 150, 100, 50, 150.0])},
              "top": {"top/cpu_pct": np.full(len(t), 99.9), "top/proc/cpu_pct": np.full(len(t), 169.0)}}
    for name, columns in traces.items():
        path = tmp_path / name / f"{name}.parquet"
        path.parent.mkdir()
        pd.DataFrame({"time": t, "step": step, **columns}).to_parquet(path, index=False)
        client.log_artifact(run_id, str(path), "telemetry")
    client.set_terminated(run_id, end_time=int((START + 4.0) * 1000))
    return run_id


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One store for the module: the known run, exported once as CSV every 1 s and once as
    Parquet every 2 s (both read by the resampling and the column-meaning tests); the
    launched-run and bad-input tests add their own experiments to it."""
    root = tmp_path_factory.mktemp("export")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    run_id = _known_run(uri, root)
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(root / ".radtrack")}
    csv_out, parquet_out = root / "wide.csv", root / "wide.parquet"
    csv_p, parquet_p = _together(("export", "known", "--every", "1s", "--out", str(csv_out)),
                                 ("export", "known", "--every", "2s", "--out", str(parquet_out)),
                                 cwd=root, env=env)
    return {"uri": uri, "env": env, "root": root, "run_id": run_id, "csv": csv_out, "csv_p": csv_p,
            "parquet": parquet_out, "parquet_p": parquet_p}


def _together(*calls: tuple[str, ...], **kw: Any) -> list[subprocess.CompletedProcess[str]]:
    """Independent ``radtrack`` commands, started at once (each its own process, as a user's)."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda args: radtrack_cli(*args, **kw), calls))


def test_known_series_resampled_by_the_documented_rule(known):
    out, p = known["csv"], known["csv_p"]
    assert p.returncode == 0, p.stderr
    assert f"wrote {out}: 4 rows (1 run(s), every 1 s)" in p.stdout
    wide = pd.read_csv(out)
    assert list(wide["seconds"]) == [0.0, 1.0, 2.0, 3.0]
    assert (wide["run_id"] == known["run_id"]).all() and (wide["run_name"] == "known-1 A").all()
    assert (wide["param.batch-size"] == 32).all() and (wide["tag.radtrack.devices"] == 0).all()
    assert pd.to_datetime(wide["time"]).iloc[1] == pd.Timestamp(START + 1.0, unit="s", tz="UTC")
    # rates and levels: the mean of the samples in each step; NaN where a step has none
    assert wide["throughput_samples_per_s"].tolist()[:2] == [15.0, 30.0]
    assert math.isnan(wide["throughput_samples_per_s"][2])
    assert wide["throughput_samples_per_s"][3] == 50.0
    assert wide["smi/gpu0/power_w"].tolist() == [150.0, 300.0, 200.0, 300.0]
    # counters: the last reading in each step
    assert wide["smi/gpu0/energy_j"].tolist() == [75.0, 350.0, 600.0, 800.0]

    p = known["parquet_p"]
    assert p.returncode == 0, p.stderr
    two = pd.read_parquet(known["parquet"])
    assert two["smi/gpu0/power_w"].tolist() == [225.0, 250.0]
    assert two["smi/gpu0/energy_j"].tolist() == [350.0, 800.0]
    assert str(two["time"].dtype).startswith("datetime64")


def test_launched_run_long_and_wide_agree_value_for_value(known):
    root, env = known["root"], known["env"]
    p = radtrack_cli("-e", "exported", "-l", "top", "--interval", "0.2",
                     str(SCRIPTS / "busy.py"), cwd=root, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = root / "exported.parquet"
    p = run_cli("export", "exported", "--every", "500ms", "--out", str(out), cwd=root, env=env)
    assert p.returncode == 0, p.stderr
    wide = pd.read_parquet(out)
    assert wide["run_id"].nunique() == 1
    run_id = wide["run_id"].iloc[0]
    long = load_series([run_id], tracking_uri=known["uri"])
    assert {"top/cpu_pct", "top/proc/cpu_pct"} <= set(wide.columns)
    checked = 0
    for metric, one in long.groupby("metric"):
        bins = np.floor(one["seconds"] / 0.5) * 0.5
        expected = (one.groupby(bins)["value"].last() if is_counter(metric)
                    else one.groupby(bins)["value"].mean())
        got = wide.set_index("seconds")[metric].dropna()
        assert got.index.tolist() == expected.index.tolist(), metric
        assert got.to_numpy() == pytest.approx(expected.to_numpy(), rel=1e-12), metric
        checked += len(got)
    assert checked > 10
    assert wide["seconds"].diff().dropna().eq(0.5).all()  # one row per step, none skipped


def test_bad_input_is_one_clear_line(known, tmp_path):
    missing = tmp_path / "mlflow.db"  # a store that was never made
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{missing}", "RADTRACK_HOME": str(tmp_path / ".radtrack")}
    x = str(tmp_path / "x.csv")
    # in-process (support.run_cli), one after the other: each refusal is the CLI's own line
    # and exit code; a subprocess each cost 3-4 CPU-s (the concurrent readers: the known fixture)
    no_store, fast = (run_cli(*args, cwd=tmp_path, env=env) for args in (
        ("export", "nope", "--out", x), ("export", "nope", "--every", "fast", "--out", x)))
    assert no_store.returncode == 2  # a read-only command: the missing store is refused, not created
    assert no_store.stderr.strip().splitlines()[-1].startswith("radtrack export: tracking store sqlite:///")
    assert "mlflow.db does not exist" in no_store.stderr and not missing.exists()
    assert fast.returncode == 2
    assert fast.stderr.strip() == ("radtrack export: --every wants a positive duration such as 1s, "
                                   "500ms or 2m, got 'fast'")
    nope, seven, metric = (run_cli(*args, cwd=tmp_path, env=known["env"]) for args in (
        ("export", "nope", "--out", x), ("export", "known", "--workload", "7", "--out", x),
        ("export", "known", "--metrics", "smi/gpu0/powr_w", "--out", x)))
    assert nope.returncode == 2
    assert nope.stderr.strip().splitlines()[-1].startswith(
        "radtrack export: experiment 'nope' not found in sqlite:///")
    assert seven.returncode == 2
    assert seven.stderr.strip() == "radtrack export: experiment 'known' has no workload 7 (workloads: 1)"
    assert metric.returncode == 2 and "unknown metric 'smi/gpu0/powr_w'" in metric.stderr
    assert not (tmp_path / "x.csv").exists()


def test_every_parsing_and_counter_rule():
    assert parse_every("1s") == 1.0 and parse_every("500ms") == 0.5
    assert parse_every("2m") == 120.0 and parse_every("0.25") == 0.25
    for bad in ("0s", "-1", "1h", ""):
        with pytest.raises(ValueError, match="--every wants a positive duration"):
            parse_every(bad)
    assert is_counter("smi/gpu0/energy_j") and not is_counter("smi/gpu0/power_w")
    empty = resample(pd.DataFrame(columns=["run_id", "metric", "seconds", "step", "value"]), 1.0)
    assert list(empty.columns) == ["run_id", "seconds"] and empty.empty


def test_every_metric_column_says_whose_figure_and_its_unit(known):
    """top's host CPU (% of all cores) and the run's (% of one core) share a unit symbol;
    the export says which is which: the CSV's data dictionary, the Parquet's field metadata."""
    out, p = known["csv"], known["csv_p"]
    assert p.returncode == 0, p.stderr
    side = out.with_name("wide.columns.csv")
    assert f"in {side}" in p.stdout
    wide = pd.read_csv(out)  # the table itself is unchanged: one header line, the same columns
    assert wide["top/proc/cpu_pct"].tolist()[0] == 169.0
    said = pd.read_csv(side, keep_default_na=False).set_index("name")  # every column, the owner's words
    assert list(said.index) == list(wide.columns) and set(said["table"]) == {"export"}
    for column in said.index:  # as radtrack/vocab/meaning.py says, and as the report's files say
        row = column_row(column, "export")
        assert (said.loc[column, "meaning"], said.loc[column, "scope"]) == (row["meaning"], row["scope"])
        assert said.loc[column, "unit"] == row["unit"], column
    assert said.loc["top/cpu_pct", "meaning"] == "host CPU (% of all cores)"
    assert said.loc["top/cpu_pct", "scope"] == "host" and said.loc["top/cpu_pct", "role"] == "host_cpu"
    assert said.loc["top/proc/cpu_pct", "meaning"] == "run CPU (% of one core)"
    assert said.loc["top/proc/cpu_pct", "scope"] == "run" and said.loc["top/proc/cpu_pct", "unit"] == "%"
    assert said.loc["smi/gpu0/power_w", "unit"] == "W" and said.loc["smi/gpu0/power_w", "scope"] == "device"
    assert said.loc["smi/gpu0/energy_j", "role"] == "energy_counter"
    assert said.loc["throughput_samples_per_s", "scope"] == "run"
    # the script's own metric says so, as the report's own_metrics table does (issue 52)
    assert said.loc["throughput_samples_per_s", "meaning"] == (
        "throughput: the script's own metric, mean over the step (samples/s)")
    assert said.loc["seconds", "unit"] == "s"

    import pyarrow.parquet as pq
    parquet, p = known["parquet"], known["parquet_p"]
    assert p.returncode == 0, p.stderr
    assert "field metadata" in p.stdout and not parquet.with_name("wide.columns.parquet").exists()
    schema = pq.read_schema(parquet)
    meta = {k.decode(): v.decode() for k, v in schema.field("top/proc/cpu_pct").metadata.items()}
    assert meta["radtrack.meaning"] == "run CPU (% of one core)" and meta["radtrack.scope"] == "run"
    assert meta["radtrack.unit_text"] == "% of one core" and meta["radtrack.role"] == "proc_cpu"
    assert schema.field("run_id").metadata[b"radtrack.meaning"] == b"MLflow run id"
    assert pd.read_parquet(parquet)["top/cpu_pct"].tolist()[0] == 99.9
