"""Spreadsheet formula injection: ``radtrack export`` and ``radtrack report`` CSV neutralise
text cells a spreadsheet would run (radtrack/csvsafe.py), through the real CLI on a real
SQLite store; ``--raw`` writes them as they are. One store and one hostile run serve the
module; its six commands start together (each ``radtrack`` process spends seconds starting
MLflow)."""

from __future__ import annotations

import csv
import io
import subprocess

import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric
from support import made_store, run_cli

from radtrack.csvsafe import neutralise, safe_frame

START = 1_700_000_000.0
HOSTILE = {"run_name": '=HYPERLINK("http://x")', "note": "@SUM(1)", "formula": "=1+1",
           "plus": "+cmd|' /C calc'!A0", "minus": "-2+3", "tab": "\tx"}


def _hostile_run(uri: str) -> str:
    client = MlflowClient(made_store(uri))
    exp = client.create_experiment("inj")
    run = client.create_run(exp, start_time=int(START * 1000), run_name=HOSTILE["run_name"],
                            tags={"radtrack.role": "row", "radtrack.workload": "1",
                                  "radtrack.letter": "A", "radtrack.collocation": "-",
                                  "radtrack.devices": "0", "note": HOSTILE["note"]})
    run_id = run.info.run_id
    for key in ("formula", "plus", "minus", "tab"):
        client.log_param(run_id, key, HOSTILE[key])
    client.log_param(run_id, "lr", "-0.5")  # a negative number stays a number
    client.log_batch(run_id, metrics=[Metric("loss", v, int((START + t) * 1000), i)
                                      for i, (t, v) in enumerate([(0.2, -1.5), (1.2, 2.0)])])
    client.set_terminated(run_id, end_time=int((START + 2.0) * 1000))
    return run_id


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The hostile run in a store of its own, and the export and report commands run on it."""
    root = tmp_path_factory.mktemp("inj")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    _hostile_run(uri)
    env = {"MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(root / ".radtrack")}
    files = {name: root / name for name in ("wide.csv", "raw.csv", "wide.parquet", "r.csv")}
    calls = {"export": ("export", "inj", "--out", str(files["wide.csv"])),
             "export_raw": ("export", "inj", "--raw", "--out", str(files["raw.csv"])),
             "export_parquet": ("export", "inj", "--out", str(files["wide.parquet"])),
             "report": ("report", "inj", "--format", "csv"),
             "report_out": ("report", "inj", "--format", "csv", "--out", str(files["r.csv"])),
             "report_raw": ("report", "inj", "--format", "csv", "--raw")}
    # in-process, one after the other (support.run_cli): six subprocesses cost 3-4 CPU-s each,
    # MLflow's import mostly; what is tested is the files and text they write, not a process
    done = {name: run_cli(*args, cwd=root, env=env) for name, args in calls.items()}
    return {**done, **files}


def _ok(p: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert p.returncode == 0, (p.args, p.stderr)
    return p


def test_export_csv_neutralises_formulas(hostile: dict) -> None:
    _ok(hostile["export"])
    out = hostile["wide.csv"]
    cells = _cells(out.read_text())
    assert "'=HYPERLINK(\"http://x\")" in cells and "'=1+1" in cells
    assert "'+cmd|' /C calc'!A0" in cells and "'-2+3" in cells
    assert "'\tx" in cells
    for cell in cells:
        assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
        if cell.startswith("-") and cell != "-":
            float(cell)  # only plain negative numbers (and '-', "none") start with '-'
    wide = pd.read_csv(out)
    assert wide["param.lr"].tolist() == [-0.5, -0.5]  # numbers stay numbers
    assert sorted(wide["loss"].tolist()) == [-1.5, 2.0]
    _ok(hostile["export_raw"])
    assert '=HYPERLINK("http://x")' in _cells(hostile["raw.csv"].read_text())
    # parquet keeps the values as they are: only CSV is read by spreadsheets
    _ok(hostile["export_parquet"])
    assert set(pd.read_parquet(hostile["wide.parquet"])["run_name"]) == {HOSTILE["run_name"]}


def test_report_csv_neutralises_formulas(hostile: dict) -> None:
    cells = _cells(_ok(hostile["report"]).stdout)
    assert "'=HYPERLINK(\"http://x\")" in cells
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]
    _ok(hostile["report_out"])
    assert "'=HYPERLINK(\"http://x\")" in _cells(hostile["r.csv"].read_text())
    assert '=HYPERLINK("http://x")' in _cells(_ok(hostile["report_raw"]).stdout)


def test_the_rule() -> None:
    assert neutralise("=1+1") == "'=1+1" and neutralise("@SUM(1)") == "'@SUM(1)"
    assert neutralise("-1.5") == "-1.5" and neutralise("+3") == "+3"
    assert neutralise("-2e-3") == "-2e-3" and neutralise("-x") == "'-x"
    assert neutralise("\tx") == "'\tx" and neutralise("\rx") == "'\rx"
    assert neutralise("plain") == "plain" and neutralise(-1.5) == -1.5
    assert neutralise("-") == "-"  # radtrack's "none" (Collocation, Devices)
    frame = pd.DataFrame({"=a": ["=b", None, "c"], "n": [-1.0, 2.0, 3.0]})
    safe = safe_frame(frame)
    assert list(safe.columns) == ["'=a", "n"]
    assert safe["'=a"].tolist()[0] == "'=b" and safe["n"].tolist() == [-1.0, 2.0, 3.0]
    assert frame["=a"].tolist()[0] == "=b"  # the caller's frame is untouched
