"""Spreadsheet formula injection: ``radtrack export`` and ``radtrack report`` CSV neutralise
text cells a spreadsheet would run (radtrack/csvsafe.py), through the real CLI on a real
SQLite store; ``--raw`` writes them as they are."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Metric
from support import radtrack_cli

from radtrack.csvsafe import neutralise, safe_frame

START = 1_700_000_000.0
HOSTILE = {"run_name": '=HYPERLINK("http://x")', "note": "@SUM(1)", "formula": "=1+1",
           "plus": "+cmd|' /C calc'!A0", "minus": "-2+3", "tab": "\tx"}


def _hostile_run(uri: str) -> str:
    client = MlflowClient(uri)
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


def test_export_csv_neutralises_formulas(store: str, tmp_path: Path) -> None:
    _hostile_run(store)
    out = tmp_path / "wide.csv"
    p = radtrack_cli("export", "inj", "--out", str(out))
    assert p.returncode == 0, p.stderr
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
    raw = tmp_path / "raw.csv"
    assert radtrack_cli("export", "inj", "--raw", "--out", str(raw)).returncode == 0
    assert '=HYPERLINK("http://x")' in _cells(raw.read_text())
    # parquet keeps the values as they are: only CSV is read by spreadsheets
    pq = tmp_path / "wide.parquet"
    assert radtrack_cli("export", "inj", "--out", str(pq)).returncode == 0
    assert set(pd.read_parquet(pq)["run_name"]) == {HOSTILE["run_name"]}


def test_report_csv_neutralises_formulas(store: str, tmp_path: Path) -> None:
    _hostile_run(store)
    p = radtrack_cli("report", "inj", "--format", "csv")
    assert p.returncode == 0, p.stderr
    cells = _cells(p.stdout)
    assert "'=HYPERLINK(\"http://x\")" in cells
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]
    out = tmp_path / "r.csv"
    assert radtrack_cli("report", "inj", "--format", "csv", "--out", str(out)).returncode == 0
    assert "'=HYPERLINK(\"http://x\")" in _cells(out.read_text())
    raw = radtrack_cli("report", "inj", "--format", "csv", "--raw")
    assert raw.returncode == 0 and '=HYPERLINK("http://x")' in _cells(raw.stdout)


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
